"""The simulated world of crashes, stalls, hangs, late finishes, lost wake-ups, clock jumps
and operator actions, over PostgreSQL: every law the simulation checks holds, and every job
finishes. (Histories need not repeat here: notifications arrive on the listener's thread.)"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.ports import ClaimStore
from awa.testing.simulation import Faults, Simulation

JOBS = 100
SEEDS = range(8)
# every fault kind, at rates high enough to strike within a hundred jobs' worth of steps
FAULTS = Faults(
    crash_rate=0.01,
    stall_rate=0.01,
    hang_rate=0.05,
    late_finish_rate=0.01,
    lost_wakeup_rate=0.5,
    clock_jump_rate=0.005,
    operator_rate=0.01,
)


@pytest.fixture
def postgres_stores(
    pg_clean_url: str,
) -> Iterator[Callable[[ManualClock, random.Random], ClaimStore]]:
    made: list[PostgresStore] = []

    def factory(clock: ManualClock, rng: random.Random) -> ClaimStore:
        store = PostgresStore(pg_clean_url, clock=clock, rng=rng, pool_size=2)
        made.append(store)
        return store

    yield factory
    for store in made:
        store.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_a_hundred_jobs_under_every_fault_keep_every_law_on_postgresql(
    seed: int, postgres_stores: Callable[[ManualClock, random.Random], ClaimStore]
) -> None:
    assert_every_law_holds_under_faults(seed, postgres_stores)


def assert_every_law_holds_under_faults(
    seed: int, store_factory: Callable[[ManualClock, random.Random], ClaimStore]
) -> None:
    """The seeded run over stores from ``store_factory`` (SQLite's test runs it too)."""
    report = Simulation(
        seed, jobs=JOBS, workers=3, faults=FAULTS, store_factory=store_factory
    ).run()
    assert report.ok, report.summary()
    assert sum(report.final_states.values()) == report.jobs_total  # with periodic, unique ones
    struck = {k for k in ("crashes", "stalls", "hangs", "late_finishes") if report.counters.get(k)}
    assert struck, report.summary()  # the faults did strike
