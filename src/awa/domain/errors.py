"""Every error a user can catch derives from ``AwaError``.

Expected races (a stale lease) are not errors: stores report them as values. The refusal of
an illegal move, ``IllegalTransition``, stands beside the table that decides it
(``awa.domain.transitions``).
"""

from __future__ import annotations

__all__ = [
    "AwaError",
    "CallbackNotFound",
    "DatabaseError",
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


class SchemaNotMigrated(AwaError):
    """The database has no awa schema, or an older one than this code needs."""


class DatabaseError(AwaError):
    """The store could not reach or use its database; ``__cause__`` holds the driver error."""
