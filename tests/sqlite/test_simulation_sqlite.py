"""The simulated world of crashes, stalls, hangs, late finishes, lost wake-ups, clock jumps
and operator actions, over SQLite: every law the simulation checks holds, and every job
finishes. Each store the simulation asks for opens the same file, as worker processes would,
so hints travel between them through the hint log."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import SqliteStore
from awa.ports import ClaimStore
from tests.postgres.test_simulation_postgres import SEEDS, assert_every_law_holds_under_faults


@pytest.fixture
def sqlite_stores(tmp_path: Path) -> Iterator[Callable[[ManualClock, random.Random], ClaimStore]]:
    made: list[SqliteStore] = []

    def factory(clock: ManualClock, rng: random.Random) -> ClaimStore:
        store = SqliteStore(str(tmp_path / "jobs.db"), clock=clock, rng=rng)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_a_hundred_jobs_under_every_fault_keep_every_law_on_sqlite(
    seed: int, sqlite_stores: Callable[[ManualClock, random.Random], ClaimStore]
) -> None:
    assert_every_law_holds_under_faults(seed, sqlite_stores)
