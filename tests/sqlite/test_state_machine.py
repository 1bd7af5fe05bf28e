"""The lifecycle state machine against SQLite: each example gets a fresh throwaway database
(``:memory:``, the same adapter and SQL as a file, without the file's set-up per example)."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, settings

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import MEMORY, SqliteStore
from awa.testing.state_machine import make_state_machine


def _fresh_store(clock: ManualClock) -> SqliteStore:
    return SqliteStore(MEMORY, clock=clock, rng=random.Random(3))


SqliteMachine = make_state_machine(_fresh_store)

TestSqliteStateMachine = SqliteMachine.TestCase
TestSqliteStateMachine.settings = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
