"""The lease guard is load-bearing: it lives in one statement (``lock_leases.sql``) and nothing
downstream repeats it, so breaking it there lets a late finish through. This test breaks it on
purpose and watches the damage, proving that the contract suite's stale-write checks are really
exercised by that one line of SQL."""

from __future__ import annotations

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.adapters.postgres._sql import SQL
from awa.domain import Complete, JobState, NewJob
from awa.ports import Applied, Finish, Stale, StaleReason

GUARD = "AND j.run_lease = g.run_lease"


def _late_finish_after_rescue_and_reclaim(store: PostgresStore, clock: ManualClock) -> object:
    store.insert([NewJob(kind="k")])
    [first] = store.claim("default", limit=1)
    clock.advance(120)
    [rescued] = store.rescue(staleness_s=90)
    assert rescued.job.state is JobState.RETRYABLE
    clock.advance(3600)
    [second] = store.claim("default", limit=1)
    assert second.run_lease == first.run_lease + 1
    return store.finish([Finish(first.lease, Complete())])[0]


def test_the_guard_is_in_lock_leases_exactly_once() -> None:
    assert SQL["lock_leases"].count(GUARD) == 1


def test_with_the_guard_a_late_finish_is_stale(store: PostgresStore, clock: ManualClock) -> None:
    result = _late_finish_after_rescue_and_reclaim(store, clock)
    assert result == Stale(result.lease, StaleReason.LEASE_SUPERSEDED)  # type: ignore[attr-defined]
    assert store.get_job(1).state is JobState.RUNNING


def test_without_the_guard_a_late_finish_completes_someone_elses_attempt(
    store: PostgresStore, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(SQL, "lock_leases", SQL["lock_leases"].replace(GUARD, ""))
    result = _late_finish_after_rescue_and_reclaim(store, clock)
    assert isinstance(result, Applied), "breaking the guard must be visible"
    assert store.get_job(1).state is JobState.COMPLETED  # the damage the guard prevents
