"""Ports: what the runtime needs from a store and a clock, as ``typing.Protocol``."""

from awa.ports.capabilities import (
    AsyncInserts,
    Closes,
    InsertsOnConnection,
    Listens,
    Migrates,
    SummarizesQueues,
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
    WriteResult,
)
from awa.ports.store import (
    BATCH_SIZE_MAX,
    DEFAULT_DEADLINE_S,
    DEFAULT_STALENESS_S,
    ClaimStore,
)
from awa.ports.summary import ENDED_WINDOW_S, DlqGroup, QueueSummary

__all__ = [
    "BATCH_SIZE_MAX",
    "DEFAULT_DEADLINE_S",
    "DEFAULT_STALENESS_S",
    "ENDED_WINDOW_S",
    "Applied",
    "AsyncInserts",
    "CallbackResolved",
    "CancelRequested",
    "ClaimStore",
    "Clock",
    "Closes",
    "DlqGroup",
    "Event",
    "Finish",
    "Heartbeat",
    "InsertsOnConnection",
    "JobsAvailable",
    "Listens",
    "Migrates",
    "QueueStats",
    "QueueSummary",
    "Rescued",
    "Stale",
    "StaleReason",
    "SummarizesQueues",
    "SystemClock",
    "WriteResult",
]
