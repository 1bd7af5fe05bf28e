"""Ports: what the runtime needs from a store and a clock, as ``typing.Protocol``."""

from awa.ports.capabilities import (
    AsyncInserts,
    Closes,
    InsertsOnConnection,
    Listens,
    Migrates,
    TracksWorkers,
)
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
    UnhandledKind,
    WriteResult,
)
from awa.ports.store import (
    BATCH_SIZE_MAX,
    DEFAULT_DEADLINE_S,
    DEFAULT_STALENESS_S,
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
    "Closes",
    "Event",
    "Finish",
    "Heartbeat",
    "InsertsOnConnection",
    "JobsAvailable",
    "Listens",
    "Migrates",
    "QueueStats",
    "Rescued",
    "Stale",
    "StaleReason",
    "SystemClock",
    "TracksWorkers",
    "UnhandledKind",
    "WriteResult",
]
