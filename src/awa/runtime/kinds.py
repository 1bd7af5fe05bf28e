"""Job kinds declared on their args type, so producers and workers agree without importing
each other's handlers: ``@awa.job_kind(queue="payments", priority=1, max_attempts=5)``.
A kind may also name its jobs' flow-control keys, as a text or as a function of the args
(``concurrency_key=lambda args: args.tenant``).

The declaration lives on the class itself (a class attribute), so it survives ``attrs.define``
rebuilding the class and is found by any process that imports the args type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from awa.domain import ValidationError
from awa.domain.flow import check_concurrency_key, check_ordering_key
from awa.domain.validation import (
    check_kind,
    check_max_attempts,
    check_priority,
    check_queue,
    shown,
)

__all__ = ["JobKind", "KeyOption", "declared_kind", "job_kind", "key_of", "key_text"]

C = TypeVar("C", bound=type)
#: a flow-control key as a kind declares it: one text for every job, a function of the
#: job's args (its value, ``None`` or a text, checked per job), or ``None``: no key
KeyOption = str | Callable[[Any], str | None] | None

_ATTRIBUTE = "__awa_job_kind__"


@attrs.frozen(kw_only=True)
class JobKind:
    """What a kind's jobs get when the caller of ``insert`` does not say; ``None``: the
    client's default (kind from the class name, queue ``default``, priority 2, 25 attempts)."""

    kind: str | None = None
    queue: str | None = None
    priority: int | None = None
    max_attempts: int | None = None
    concurrency_key: KeyOption = None
    ordering_key: KeyOption = None

    @property
    def keys_per_job(self) -> bool:
        """Whether a key is a function of the args: each job's request is then its own."""
        return callable(self.concurrency_key) or callable(self.ordering_key)


def _key_option(name: str, value: object, check: Callable[[object], str | None]) -> KeyOption:
    if value is None or callable(value):
        return value  # checked per job: key_of
    if not isinstance(value, str):
        raise ValidationError(
            f"{name} takes a text or a function of the args, got {type(value).__name__}"
        )
    return check(value)


def key_of(option: KeyOption, args: object, name: str = "key") -> str | None:
    """A job's key as its kind declares it (``KeyOption``), not yet checked: ``NewJob``
    checks it. Bytes (upstream's ``ordering_key=b"account-42"``) are read as UTF-8."""
    key: str | None = key_text(name, option(args) if callable(option) else option)
    return key


def key_text(name: str, key: object) -> Any:
    """A flow-control key given as bytes, as the text it spells in UTF-8 (the key stored is
    a text); anything else as given, for ``NewJob``'s check."""
    if not isinstance(key, bytes):
        return key
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError(f"{name} bytes must be UTF-8 text, got {shown(key)}") from None


def job_kind(
    *,
    kind: str | None = None,
    queue: str | None = None,
    priority: int | None = None,
    max_attempts: int | None = None,
    concurrency_key: KeyOption = None,
    ordering_key: KeyOption = None,
) -> Callable[[C], C]:
    """Declare the kind of jobs whose args are the decorated class (a dataclass, attrs class,
    pydantic model or ``TypedDict``): its name, queue, priority and attempt budget, and its
    flow-control keys (``docs/flow-control.md``): a text, or a function that takes the args
    and returns the job's key (or ``None``). ``insert`` uses them when its caller gives
    none, and ``client.task`` registers the handler on that queue. Put it above
    ``@dataclass`` / ``@attrs.define``."""
    declared = JobKind(
        kind=None if kind is None else check_kind(kind),
        queue=None if queue is None else check_queue(queue),
        priority=None if priority is None else check_priority(priority),
        max_attempts=None if max_attempts is None else check_max_attempts(max_attempts),
        concurrency_key=_key_option("concurrency_key", concurrency_key, check_concurrency_key),
        ordering_key=_key_option("ordering_key", ordering_key, check_ordering_key),
    )

    def declare(cls: C) -> C:
        if not isinstance(cls, type):
            raise ValidationError(f"@awa.job_kind decorates a class, got {cls!r}")
        setattr(cls, _ATTRIBUTE, declared)
        return cls

    return declare


def declared_kind(args_type: type) -> JobKind | None:
    """The declaration on ``args_type`` itself (a subclass declares its own)."""
    found = vars(args_type).get(_ATTRIBUTE) if isinstance(args_type, type) else None
    return found if isinstance(found, JobKind) else None
