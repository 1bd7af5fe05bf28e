"""Ports: what the runtime needs from a store and a clock, as ``typing.Protocol``."""

from awa.ports.capabilities import (
    AsyncInserts,
    Closes,
    InsertsOnConnection,
    Listens,
    Migrates,
    Probes,
)
from awa.ports.clock import Clock, SystemClock
from awa.ports.results import (
    Applied,
    CallbackResolved,
    CancelRequested,
    Event,
    Finish,
    FireRound,
    Heartbeat,
    JobsAvailable,
    QueueSettings,
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
    "FireRound",
    "Heartbeat",
    "InsertsOnConnection",
    "JobsAvailable",
    "Listens",
    "Migrates",
    "Probes",
    "QueueSettings",
    "QueueStats",
    "Rescued",
    "Stale",
    "StaleReason",
    "SystemClock",
    "WriteResult",
]
