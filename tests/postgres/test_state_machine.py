"""The lifecycle state machine against PostgreSQL: fewer examples than in memory, no deadline
(each step is a few round trips to a real server)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from psycopg_pool import ConnectionPool

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.testing.state_machine import make_state_machine

from .conftest import truncate

_pools: list[ConnectionPool[Any]] = []


@pytest.fixture(autouse=True)
def _shared_pool(pg_pool: ConnectionPool[Any]) -> Iterator[None]:
    """Hypothesis builds the machine itself, outside pytest's fixtures: hand it the pool here."""
    _pools.append(pg_pool)
    yield
    _pools.pop()


def _fresh_store(clock: ManualClock) -> PostgresStore:
    truncate(_pools[-1])
    return PostgresStore(_pools[-1], clock=clock, rng=random.Random(3))


PostgresMachine = make_state_machine(_fresh_store)

TestPostgresStateMachine = PostgresMachine.TestCase
TestPostgresStateMachine.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
