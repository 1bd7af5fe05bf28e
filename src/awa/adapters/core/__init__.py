"""The core every store adapter builds on, by role: ``transaction`` (what it asks of a
store), ``fenced`` (the writes every role shares), ``producing``, ``working``, ``callbacks``,
``maintenance``, ``operating``, ``dead_letters`` and ``schedules`` (the verbs), composed in
``store.StoreCore``; ``row_paths`` holds the core's own insert, claim, promote and fire."""

from awa.adapters.core.row_paths import RowPaths
from awa.adapters.core.store import StoreCore
from awa.adapters.core.transaction import (
    FlowTransaction,
    JobBatch,
    JobQuery,
    QueueFlow,
    RowTransaction,
    SettingsChange,
    Transaction,
    UniqueKeyRace,
)

__all__ = [
    "FlowTransaction",
    "JobBatch",
    "JobQuery",
    "QueueFlow",
    "RowPaths",
    "RowTransaction",
    "SettingsChange",
    "StoreCore",
    "Transaction",
    "UniqueKeyRace",
]
