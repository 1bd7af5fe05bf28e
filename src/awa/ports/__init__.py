"""Ports: what the runtime needs from a store and a clock, as ``typing.Protocol``."""

from awa.ports.clock import Clock, SystemClock
from awa.ports.results import (
    Applied,
    CallbackResolved,
    CancelRequested,
    Event,
    Finish,
    Heartbeat,
    JobsAvailable,
    QueueStats,
    Rescued,
    Stale,
    StaleReason,
    WriteResult,
)
from awa.ports.store import (
    BATCH_SIZE_MAX,
    DEFAULT_DEADLINE_S,
    DEFAULT_STALENESS_S,
    AsyncInserts,
    ClaimStore,
)

__all__ = [
    "BATCH_SIZE_MAX",
    "DEFAULT_DEADLINE_S",
    "DEFAULT_STALENESS_S",
    "Applied",
    "AsyncInserts",
    "CallbackResolved",
    "CancelRequested",
    "ClaimStore",
    "Clock",
    "Event",
    "Finish",
    "Heartbeat",
    "JobsAvailable",
    "QueueStats",
    "Rescued",
    "Stale",
    "StaleReason",
    "SystemClock",
    "WriteResult",
]
