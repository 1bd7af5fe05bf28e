"""The lifecycle state machine against the in-memory store (1,000 examples under CI)."""

import random

from hypothesis import settings

from awa.adapters.memory import ManualClock, MemoryStore
from awa.testing.state_machine import make_state_machine

MemoryMachine = make_state_machine(lambda clock: MemoryStore(clock, rng=random.Random(3)))

TestMemoryStoreStateMachine = MemoryMachine.TestCase
TestMemoryStoreStateMachine.settings = settings(stateful_step_count=40)


def test_factory_hands_each_example_a_fresh_clock_and_empty_store() -> None:
    first, second = MemoryMachine(), MemoryMachine()
    assert isinstance(first.clock, ManualClock)  # type: ignore[attr-defined]
    assert first.clock is not second.clock  # type: ignore[attr-defined]
    assert first.store.list_jobs() == []  # type: ignore[attr-defined]
