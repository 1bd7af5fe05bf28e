"""awa: PostgreSQL-native background jobs with an explicit, fenced and verified lifecycle.

This module is the API map: what application code imports.
"""

from awa.adapters.memory import ManualClock, MemoryStore
from awa.client import AsyncClient, Client, InsertSpec
from awa.domain import (
    DEFAULT_UNIQUE_STATES,
    AwaError,
    CallbackNotFound,
    CallbackToken,
    Cancel,
    DatabaseError,
    DlqEntry,
    ErrorEntry,
    IllegalTransition,
    JobNotFound,
    JobState,
    Lease,
    NewJob,
    RetryAfter,
    Schedule,
    ScheduleNotFound,
    ScheduleRecord,
    SchemaNotMigrated,
    SerializationError,
    Snooze,
    TerminalError,
    Unique,
    UniqueConflict,
    UnknownJobKind,
    Unreadable,
    ValidationError,
    WaitForCallback,
)
from awa.domain import Job as JobRecord
from awa.runtime.attempts import AttemptEnded
from awa.runtime.config import QueueConfig, RuntimeConfig
from awa.runtime.context import Job, SyncJob
from awa.runtime.kinds import JobKind, job_kind

__all__ = [
    "DEFAULT_UNIQUE_STATES",
    "AsyncClient",
    "AttemptEnded",
    "AwaError",
    "CallbackNotFound",
    "CallbackToken",
    "Cancel",
    "Client",
    "DatabaseError",
    "DlqEntry",
    "ErrorEntry",
    "IllegalTransition",
    "InsertSpec",
    "Job",
    "JobKind",
    "JobNotFound",
    "JobRecord",
    "JobState",
    "Lease",
    "ManualClock",
    "MemoryStore",
    "NewJob",
    "QueueConfig",
    "RetryAfter",
    "RuntimeConfig",
    "Schedule",
    "ScheduleNotFound",
    "ScheduleRecord",
    "SchemaNotMigrated",
    "SerializationError",
    "Snooze",
    "SyncJob",
    "TerminalError",
    "Unique",
    "UniqueConflict",
    "UnknownJobKind",
    "Unreadable",
    "ValidationError",
    "WaitForCallback",
    "job_kind",
]
