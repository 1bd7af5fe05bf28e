"""The pure lifecycle: states, the transition table, decisions and validation.

No I/O, clocks, asyncio or database drivers here: ``tests/domain/test_purity.py`` walks the
imports to keep it so.
"""

from awa.domain.backoff import BACKOFF_MAX_S, RandomSource, backoff_s
from awa.domain.decisions import Decision
from awa.domain.endings import AttemptEnd, attempt_end, attempt_ends
from awa.domain.errors import (
    AwaError,
    CallbackNotFound,
    DatabaseError,
    JobNotFound,
    ScheduleNotFound,
    SchemaNotMigrated,
    SerializationError,
    TerminalError,
    UniqueConflict,
    UnknownJobKind,
    ValidationError,
)
from awa.domain.outcomes import (
    Cancel,
    Complete,
    CompleteCallback,
    Fail,
    FailCallback,
    Outcome,
    Resolution,
    ResumeCallback,
    RetryAfter,
    RetryCallback,
    Snooze,
    WaitForCallback,
)
from awa.domain.periodic import FirePlan, MissedFirePolicy, Schedule, ScheduleRecord
from awa.domain.rescue import RescueCause, rescue_cause
from awa.domain.states import LIVE_STATES, TERMINAL_STATES, JobState
from awa.domain.transitions import (
    INSERT_STATES,
    TRANSITIONS,
    IllegalTransition,
    Trigger,
    next_state,
)
from awa.domain.unique import OnConflict, holds_unique_key, retakes_unique_key
from awa.domain.unique_keys import DEFAULT_UNIQUE_STATES, Unique
from awa.domain.values import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    CallbackToken,
    DlqEntry,
    DlqReason,
    ErrorEntry,
    Job,
    Lease,
    NewJob,
    Unreadable,
)

__all__ = [
    "BACKOFF_MAX_S",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_PRIORITY",
    "DEFAULT_UNIQUE_STATES",
    "INSERT_STATES",
    "LIVE_STATES",
    "TERMINAL_STATES",
    "TRANSITIONS",
    "AttemptEnd",
    "AwaError",
    "CallbackNotFound",
    "CallbackToken",
    "Cancel",
    "Complete",
    "CompleteCallback",
    "DatabaseError",
    "Decision",
    "DlqEntry",
    "DlqReason",
    "ErrorEntry",
    "Fail",
    "FailCallback",
    "FirePlan",
    "IllegalTransition",
    "Job",
    "JobNotFound",
    "JobState",
    "Lease",
    "MissedFirePolicy",
    "NewJob",
    "OnConflict",
    "Outcome",
    "RandomSource",
    "RescueCause",
    "Resolution",
    "ResumeCallback",
    "RetryAfter",
    "RetryCallback",
    "Schedule",
    "ScheduleNotFound",
    "ScheduleRecord",
    "SchemaNotMigrated",
    "SerializationError",
    "Snooze",
    "TerminalError",
    "Trigger",
    "Unique",
    "UniqueConflict",
    "UnknownJobKind",
    "Unreadable",
    "ValidationError",
    "WaitForCallback",
    "attempt_end",
    "attempt_ends",
    "backoff_s",
    "holds_unique_key",
    "next_state",
    "rescue_cause",
    "retakes_unique_key",
]
