"""Job kinds declared on their args type, so producers and workers agree without importing
each other's handlers: ``@awa.job_kind(queue="payments", priority=1, max_attempts=5)``.

The declaration lives on the class itself (a class attribute), so it survives ``attrs.define``
rebuilding the class and is found by any process that imports the args type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import attrs

from awa.domain import ValidationError
from awa.domain.validation import check_kind, check_max_attempts, check_priority, check_queue

__all__ = ["JobKind", "declared_kind", "job_kind"]

C = TypeVar("C", bound=type)

_ATTRIBUTE = "__awa_job_kind__"


@attrs.frozen(kw_only=True)
class JobKind:
    """What a kind's jobs get when the caller of ``insert`` does not say; ``None``: the
    client's default (kind from the class name, queue ``default``, priority 2, 25 attempts)."""

    kind: str | None = None
    queue: str | None = None
    priority: int | None = None
    max_attempts: int | None = None


def job_kind(
    *,
    kind: str | None = None,
    queue: str | None = None,
    priority: int | None = None,
    max_attempts: int | None = None,
) -> Callable[[C], C]:
    """Declare the kind of jobs whose args are the decorated class (a dataclass, attrs class,
    pydantic model or ``TypedDict``): its name, queue, priority and attempt budget.
    ``insert`` uses them when its caller gives none, and ``client.task`` registers the
    handler on that queue. Put it above ``@dataclass`` / ``@attrs.define``."""
    declared = JobKind(
        kind=None if kind is None else check_kind(kind),
        queue=None if queue is None else check_queue(queue),
        priority=None if priority is None else check_priority(priority),
        max_attempts=None if max_attempts is None else check_max_attempts(max_attempts),
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
