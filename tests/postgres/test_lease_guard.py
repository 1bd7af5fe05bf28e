"""The lease guard is load-bearing: each write path holds it in exactly one statement
(``lock_free_leases.sql`` for the general path's batch, ``lock_leases.sql`` when it waits for a
held row or registers a callback, both through their shared part; ``complete_many.sql`` and
``complete_many_claimed.sql`` for the completion hot path, through theirs) and nothing
downstream repeats it, so breaking it there lets a late write through. These tests break it on
purpose and watch the damage."""

from __future__ import annotations

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.adapters.postgres._sql import SQL
from awa.domain import Complete, JobState, NewJob, Outcome, Snooze
from awa.domain.transitions import Trigger, allowed_from
from awa.ports import Applied, Finish, Stale, StaleReason

GUARDS = {
    "lock_free_leases": "AND j.run_lease = g.run_lease",
    "lock_leases": "AND j.run_lease = g.run_lease",
    "complete_many": "AND j.run_lease = c.run_lease",
    "complete_many_claimed": "AND j.run_lease = c.run_lease",
}
# the general path is taken by any outcome but Complete; the hot path by Complete, reading
# back whole rows, or only what an attempt changes when the finish carries its claimed job;
# registering a callback locks its one lease waiting (lock_leases.sql, as the retry of a
# batch's held row does)
OUTCOMES: dict[str, Outcome | None] = {
    "lock_free_leases": Snooze(10),
    "lock_leases": None,
    "complete_many": Complete(),
    "complete_many_claimed": Complete(),
}


def _late_finish_after_rescue_and_reclaim(
    store: PostgresStore, clock: ManualClock, statement: str
) -> object:
    store.insert([NewJob(kind="k")])
    [first] = store.claim("default", limit=1)
    clock.advance(120)
    [rescued] = store.rescue(staleness_s=90)
    assert rescued.job.state is JobState.RETRYABLE
    clock.advance(3600)
    [second] = store.claim("default", limit=1)
    assert second.run_lease == first.run_lease + 1
    outcome = OUTCOMES[statement]
    if outcome is None:
        return store.register_callback(first.lease)
    claimed = first if statement == "complete_many_claimed" else None
    return store.finish([Finish(first.lease, outcome, claimed=claimed)])[0]


@pytest.mark.parametrize("statement", list(GUARDS))
def test_each_guard_is_in_its_statement_exactly_once(statement: str) -> None:
    assert SQL[statement].count(GUARDS[statement]) == 1


@pytest.mark.parametrize("statement", list(GUARDS))
def test_with_the_guard_a_late_finish_is_stale(
    store: PostgresStore, clock: ManualClock, statement: str
) -> None:
    result = _late_finish_after_rescue_and_reclaim(store, clock, statement)
    assert result == Stale(result.lease, StaleReason.LEASE_SUPERSEDED)  # type: ignore[attr-defined]
    assert store.get_job(1).state is JobState.RUNNING


@pytest.mark.parametrize("statement", list(GUARDS))
def test_without_the_guard_a_late_finish_ends_someone_elses_attempt(
    store: PostgresStore, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, statement: str
) -> None:
    monkeypatch.setitem(SQL, statement, SQL[statement].replace(GUARDS[statement], ""))
    result = _late_finish_after_rescue_and_reclaim(store, clock, statement)
    assert isinstance(result, Applied), "breaking the guard must be visible"
    # the damage the guard prevents: the new attempt ended, or a callback parked on it
    job = store.get_job(1)
    assert job.state is not JobState.RUNNING or job.callback_id is not None


def test_the_completion_hot_path_guards_the_only_state_the_table_allows() -> None:
    assert allowed_from(Trigger.COMPLETE) == (JobState.RUNNING,)
    assert "AND j.state = 'running'" in SQL["complete_many"]
    assert "AND j.state = 'running'" in SQL["complete_many_claimed"]
