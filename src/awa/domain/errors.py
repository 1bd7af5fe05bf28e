"""Every error a user can catch derives from ``AwaError``.

Expected races (a stale lease) are not errors: stores report them as values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from awa.domain.states import JobState
    from awa.domain.transitions import Trigger

__all__ = [
    "AwaError",
    "CallbackNotFound",
    "DatabaseError",
    "IllegalTransition",
    "JobNotFound",
    "ScheduleNotFound",
    "SchemaNotMigrated",
    "SerializationError",
    "TerminalError",
    "UniqueConflict",
    "UnknownJobKind",
    "ValidationError",
]


class AwaError(Exception):
    """Base class of every error awa raises on purpose."""


class ValidationError(AwaError, ValueError):
    """An input was rejected before anything changed."""


class TerminalError(AwaError):
    """Raised by a handler for input that can never succeed: the job fails without retries."""


class SerializationError(AwaError):
    """Job arguments could not be converted to or from JSON."""


class UnknownJobKind(AwaError):
    """No handler is registered for a job's kind."""


class JobNotFound(AwaError, LookupError):
    def __init__(self, job_id: int) -> None:
        super().__init__(f"job {job_id} not found")
        self.job_id = job_id


class UniqueConflict(AwaError):
    """Another job holds the unique key this job would take; nothing changed. ``job_id`` is
    the holder's id."""

    def __init__(self, job_id: int, kind: str, state: str) -> None:
        super().__init__(f"job {job_id} ({kind}, {state}) holds this unique key; nothing changed")
        self.job_id = job_id


class ScheduleNotFound(AwaError, LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(f"periodic schedule {name!r} not found")
        self.name = name


class CallbackNotFound(AwaError, LookupError):
    """The callback id is unknown, already resolved, or belongs to an attempt that ended."""

    def __init__(self, callback_id: str) -> None:
        super().__init__(f"callback {callback_id} not found (unknown, resolved, or stale)")
        self.callback_id = callback_id


class IllegalTransition(AwaError):
    """The lifecycle table has no move for this trigger from the job's current state."""

    def __init__(
        self,
        state: JobState,
        trigger: Trigger,
        allowed: tuple[JobState, ...],
        job_id: int | None = None,
    ) -> None:
        who = f"job {job_id} is" if job_id is not None else "the job is"
        needs = ", ".join(s.value for s in allowed) or "nothing"
        super().__init__(f"{who} {state.value}; {trigger.value} needs one of: {needs}")
        self.state = state
        self.trigger = trigger
        self.allowed = allowed
        self.job_id = job_id


class SchemaNotMigrated(AwaError):
    """The database has no awa schema, or an older one than this code needs."""


class DatabaseError(AwaError):
    """The store could not reach or use its database; ``__cause__`` holds the driver error."""
