"""The in-memory adapter: a real ``ClaimStore``, a ``ManualClock`` and fault hooks."""

from awa.adapters.memory.clock import ManualClock
from awa.adapters.memory.faults import FaultHooks, SimulatedCrash
from awa.adapters.memory.store import MemoryStore

__all__ = ["FaultHooks", "ManualClock", "MemoryStore", "SimulatedCrash"]
