"""The agreement program (``awa.testing.agreement``), applied to the in-memory store (the
reference) and to PostgreSQL, both on a manual clock with the same seeded jitter: every answer
and every job must agree, as whole values."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg_pool import ConnectionPool

from awa.adapters.memory import ManualClock, MemoryStore
from awa.adapters.postgres import PostgresStore
from awa.testing.agreement import SEED, HalfJitter, assert_stores_agree, insert_step, program_step

from .conftest import truncate


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.lists(insert_step, min_size=2, max_size=6),
    steps=st.lists(program_step, min_size=5, max_size=40),
)
def test_memory_and_postgres_agree_on_every_answer_and_every_job(
    pg_pool: ConnectionPool[Any], seed: list[tuple[Any, ...]], steps: list[tuple[Any, ...]]
) -> None:
    truncate(pg_pool)
    memory_clock, pg_clock = ManualClock(), ManualClock()
    memory = MemoryStore(memory_clock, rng=HalfJitter(SEED))
    postgres = PostgresStore(pg_pool, clock=pg_clock, rng=HalfJitter(SEED))
    assert_stores_agree((memory, memory_clock), (postgres, pg_clock), "postgres", seed + steps)
