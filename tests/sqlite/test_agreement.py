"""The same random program as ``tests/postgres/test_agreement.py``, applied to the in-memory
store (the reference) and to SQLite, both on a manual clock with the same seeded jitter:
every answer and every job must agree, as whole values."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awa.adapters.memory import ManualClock, MemoryStore
from awa.adapters.sqlite import MEMORY, SqliteStore
from tests.postgres.test_agreement import (
    SEED,
    _answer,
    _everything,
    _HalfJitter,
    _insert,
    _Program,
    _step,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.lists(_insert, min_size=2, max_size=6),
    steps=st.lists(_step, min_size=5, max_size=40),
)
def test_memory_and_sqlite_agree_on_every_answer_and_every_job(
    seed: list[tuple[Any, ...]], steps: list[tuple[Any, ...]]
) -> None:
    memory_clock, sqlite_clock = ManualClock(), ManualClock()
    memory = MemoryStore(memory_clock, rng=_HalfJitter(SEED))
    with SqliteStore(MEMORY, clock=sqlite_clock, rng=_HalfJitter(SEED)) as sqlite:
        program = _Program()
        for number, step in enumerate(seed + steps):
            expected = _answer(program, memory, memory_clock, step)
            actual = _answer(program, sqlite, sqlite_clock, step)
            assert actual == expected, f"step {number} {step}: sqlite {actual!r} != {expected!r}"
            program.learn(expected)
            assert _everything(sqlite) == _everything(memory), f"after step {number} {step}"
