"""Plant the two scheduling bugs the issue names into the memory store and watch the contract
and the simulator catch each of them (the state machine catches the first too, but only after
thousands of examples: too slow to run here).

* a unique key not released when its job fails, though ``failed`` is outside its states;
* a periodic fire enqueued without the compare-and-set on the schedule's next fire.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

import awa.adapters.memory.table as memory_table
from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import FirePlan, Job, JobState, Trigger, UniqueConflict
from awa.testing.contract import PeriodicContract, UniqueContract
from tests.simulation.test_planted_bugs import _first_violation


def _store() -> tuple[MemoryStore, ManualClock]:
    clock = ManualClock()
    return MemoryStore(clock, rng=random.Random(1)), clock


@pytest.fixture
def key_kept_by_failed_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    def holds(job: Job) -> bool:  # the bug: a failed job keeps its key whatever its states say
        in_states = job.state in job.unique_states or job.state is JobState.FAILED
        return job.unique_key is not None and in_states

    monkeypatch.setattr(memory_table, "holds_unique_key", holds)


@pytest.fixture
def fire_without_compare_and_set(monkeypatch: pytest.MonkeyPatch) -> None:
    original = MemoryStore._fire

    def fire(self: MemoryStore, plan: FirePlan) -> Any:
        current = self._table.schedules.get(plan.name)
        if current is not None:  # the bug: whatever the schedule says now, the plan fires
            self._table.schedules[plan.name] = current.__class__(
                schedule=current.schedule,
                next_fire_at=plan.expected_next,
                last_fire_at=current.last_fire_at,
                paused=current.paused,
                created_at=current.created_at,
                updated_at=current.updated_at,
            )
        return original(self, plan)

    monkeypatch.setattr(MemoryStore, "_fire", fire)


def test_the_contract_catches_a_key_kept_by_a_failed_job(key_kept_by_failed_jobs: None) -> None:
    store, clock = _store()
    with pytest.raises((AssertionError, UniqueConflict)):
        UniqueContract().test_every_transition_holds_the_key_exactly_in_its_states(
            store, clock, "default", JobState.RUNNING, Trigger.FAIL
        )


def test_the_simulator_catches_a_key_kept_by_a_failed_job(key_kept_by_failed_jobs: None) -> None:
    _, violation = _first_violation()
    assert "insert refused for job" in violation or "while [] hold it" in violation


def test_the_contract_catches_a_fire_without_compare_and_set(
    fire_without_compare_and_set: None,
) -> None:
    store, clock = _store()
    with pytest.raises(AssertionError):
        PeriodicContract().test_a_stale_plan_enqueues_nothing(store, clock)


def test_the_simulator_catches_a_fire_without_compare_and_set(
    fire_without_compare_and_set: None,
) -> None:
    _, violation = _first_violation()
    assert "twice" in violation
