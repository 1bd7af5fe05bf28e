"""The in-memory store passes the same contract as every other adapter."""

import random

from awa.adapters.memory import ManualClock, MemoryStore
from awa.ports import ClaimStore
from awa.testing.contract import ClaimStoreContract


class TestMemoryStoreContract(ClaimStoreContract):
    def make_store(self, clock: ManualClock) -> ClaimStore:
        return MemoryStore(clock, rng=random.Random(7))
