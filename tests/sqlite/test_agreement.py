"""The agreement program (``awa.testing.agreement``), applied to the in-memory store (the
reference) and to SQLite, both on a manual clock with the same seeded jitter: every answer and
every job must agree, as whole values."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awa.adapters.memory import ManualClock, MemoryStore
from awa.adapters.sqlite import MEMORY, SqliteStore
from awa.testing.agreement import SEED, HalfJitter, assert_stores_agree, insert_step, program_step


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.lists(insert_step, min_size=2, max_size=6),
    steps=st.lists(program_step, min_size=5, max_size=40),
)
def test_memory_and_sqlite_agree_on_every_answer_and_every_job(
    seed: list[tuple[Any, ...]], steps: list[tuple[Any, ...]]
) -> None:
    memory_clock, sqlite_clock = ManualClock(), ManualClock()
    memory = MemoryStore(memory_clock, rng=HalfJitter(SEED))
    with SqliteStore(MEMORY, clock=sqlite_clock, rng=HalfJitter(SEED)) as sqlite:
        assert_stores_agree((memory, memory_clock), (sqlite, sqlite_clock), "sqlite", seed + steps)
