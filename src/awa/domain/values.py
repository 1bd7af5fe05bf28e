"""Immutable values the lifecycle works on: the job, its attempts' errors, leases, callbacks."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from awa.domain import validation as v
from awa.domain.defaults import DEFAULT_MAX_ATTEMPTS, DEFAULT_PRIORITY
from awa.domain.errors import ValidationError
from awa.domain.flow_limits import check_concurrency_key, check_ordering_key
from awa.domain.states import JobState
from awa.domain.unique_keys import Unique, unique_key_at

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_PRIORITY",
    "CallbackToken",
    "DlqEntry",
    "DlqReason",
    "ErrorEntry",
    "Job",
    "Lease",
    "NewJob",
    "Unreadable",
]


class DlqReason(str, enum.Enum):
    """Why a failed job entered the dead-letter queue (operators may also give their own)."""

    MAX_ATTEMPTS_EXHAUSTED = "max_attempts_exhausted"
    TERMINAL_ERROR = "terminal_error"
    HEARTBEAT_STALE = "heartbeat_stale"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    CALLBACK_TIMEOUT = "callback_timeout"
    WORKER_SHUTDOWN = "worker_shutdown"

    def __str__(self) -> str:
        return self.value


@attrs.frozen
class Lease:
    """Identifies one attempt: the only key that may write to a live job."""

    job_id: int
    run_lease: int

    def __str__(self) -> str:
        return f"{self.job_id}@{self.run_lease}"


@attrs.frozen
class ErrorEntry:
    """One line of a job's error history; kept across retries so repeats are visible."""

    error: str
    attempt: int
    at: datetime
    terminal: bool = False
    traceback: str | None = None


@attrs.frozen
class Unreadable:
    """A stored column of a job that this version cannot read back (written by hand, by an
    older version, by a bug): its name, its stored value as text (cut short), and why. The job
    is read all the same, that column holding the nearest value it can (``awa.adapters``),
    so one such row never stops a claim, a listing or a maintenance round; a claim fails it
    (``decisions.unreadable_failure``)."""

    column: str
    raw: str
    reason: str

    def __str__(self) -> str:
        return f"{self.column} holds {self.raw!r} ({self.reason})"


@attrs.frozen
class CallbackToken:
    """Handed to the code that starts external work; the external side answers with its id."""

    callback_id: str
    lease: Lease
    timeout_at: datetime


def _args(value: Mapping[str, Any]) -> dict[str, Any]:
    return v.check_json_object("args", value)


def _metadata(value: Mapping[str, Any]) -> dict[str, Any]:
    return v.check_json_object("metadata", value)


def _run_at(value: datetime | None) -> datetime | None:
    return None if value is None else v.check_instant("run_at", value)


@attrs.frozen(kw_only=True)
class NewJob:
    """What a producer asks for. Constructing one validates it; a bad value raises
    ``ValidationError`` before any store is touched."""

    kind: str = attrs.field(converter=v.check_kind)
    args: dict[str, Any] = attrs.field(factory=dict, converter=_args)
    queue: str = attrs.field(default="default", converter=v.check_queue)
    priority: int = attrs.field(default=DEFAULT_PRIORITY, converter=v.check_priority)
    max_attempts: int = attrs.field(default=DEFAULT_MAX_ATTEMPTS, converter=v.check_max_attempts)
    #: ``None``: now; else an instant from ``INSTANT_MIN`` to ``INSTANT_MAX``, kept in UTC
    run_at: datetime | None = attrs.field(default=None, converter=_run_at)
    tags: tuple[str, ...] = attrs.field(default=(), converter=v.check_tags)
    metadata: dict[str, Any] = attrs.field(factory=dict, converter=_metadata)
    #: what makes a duplicate of this job (``awa.domain.unique_keys``); ``None``: no key
    unique: Unique | None = attrs.field(default=None)
    #: the key a queue's ``key_concurrency_limit`` and ``key_rate_limit`` count by
    #: (``awa.domain.flow``); ``None``: only the queue's own limits hold the job
    concurrency_key: str | None = attrs.field(default=None, converter=check_concurrency_key)
    #: jobs of one ``(queue, ordering_key)`` run one at a time, in insert order
    ordering_key: str | None = attrs.field(default=None, converter=check_ordering_key)
    # args_json()'s text, made on first use: the size check and the store share one dump
    _args_json: str | None = attrs.field(default=None, init=False, eq=False, repr=False)

    @unique.validator
    def _check_unique(self, _: attrs.Attribute[Unique | None], value: object) -> None:
        if value is not None and not isinstance(value, Unique):
            raise ValidationError(f"unique takes an awa.Unique, got {type(value).__name__}")

    def with_args(self, args: Mapping[str, Any]) -> NewJob:
        """The same request with other ``args``: only they are checked, every other field was
        when this request was made. A batch of jobs of one shape is made from one request
        this way, without validating its kind, queue, options and tags once per job."""
        job: NewJob = object.__new__(NewJob)
        # field by field, as NewJob's own __init__ sets them; tests/domain compare every field
        # with a NewJob made in full
        _set_field(job, "kind", self.kind)
        _set_field(job, "args", _args(args))
        _set_field(job, "queue", self.queue)
        _set_field(job, "priority", self.priority)
        _set_field(job, "max_attempts", self.max_attempts)
        _set_field(job, "run_at", self.run_at)
        _set_field(job, "tags", self.tags)
        _set_field(job, "metadata", dict(self.metadata))  # each job its own, as when made
        _set_field(job, "unique", self.unique)
        _set_field(job, "concurrency_key", self.concurrency_key)
        _set_field(job, "ordering_key", self.ordering_key)
        _set_field(job, "_args_json", None)
        return job

    def args_json(self) -> str:
        """``args`` as compact JSON text, made once: what ``max_args_bytes`` measures and what
        a store that keeps JSON as text writes."""
        text = self._args_json
        if text is None:
            text = v.compact_json(self.args)
            object.__setattr__(self, "_args_json", text)  # a cache, not a change of value
        return text

    def unique_digest(self) -> str | None:
        """The job's unique key without its period number (``None``: not unique)."""
        if self.unique is None:
            return None
        return self.unique.digest(self.kind, self.queue, self.args)

    def unique_key_at(self, run_at: datetime) -> str | None:
        """The key the job takes when inserted to run at ``run_at``."""
        digest = self.unique_digest()
        if digest is None or self.unique is None:
            return None
        return unique_key_at(digest, self.unique.period, run_at)


_set_field = object.__setattr__  # how a frozen class's own __init__ sets its fields


@attrs.frozen(kw_only=True)
class Job:
    """A job as the store holds it. Change it only through the decision functions."""

    id: int
    kind: str
    queue: str
    args: dict[str, Any]
    state: JobState
    priority: int
    attempt: int
    max_attempts: int
    run_lease: int
    run_at: datetime
    created_at: datetime
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = attrs.field(factory=dict)
    errors: tuple[ErrorEntry, ...] = ()
    attempted_at: datetime | None = None
    heartbeat_at: datetime | None = None
    deadline_at: datetime | None = None
    finalized_at: datetime | None = None
    progress: dict[str, Any] | None = None
    callback_id: str | None = None
    callback_timeout_at: datetime | None = None
    callback_result: Any = None
    #: the key the job holds while it is in ``unique_states`` (``awa.domain.unique``)
    unique_key: str | None = None
    unique_states: frozenset[JobState] = frozenset()
    #: flow control's keys, as inserted (``NewJob``)
    concurrency_key: str | None = None
    ordering_key: str | None = None
    #: the columns a store could not read back (``Unreadable``); empty for every job awa wrote
    unreadable: tuple[Unreadable, ...] = ()

    @property
    def lease(self) -> Lease:
        return Lease(self.id, self.run_lease)

    @property
    def attempts_spent(self) -> bool:
        """The poison-job rule: no attempt is left after the current one."""
        return self.attempt >= self.max_attempts


@attrs.frozen
class DlqEntry:
    """A failed job held in the dead-letter queue, with why and when it got there."""

    job: Job
    reason: str
    dlq_at: datetime
