"""The contract of the maintenance verbs: promotion, retention and leadership.

``promote`` of due jobs, ``delete_finished`` and ``expire_dlq`` retention, and one
maintenance leader at a time (``try_lead``, ``release_lead``).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import Complete, Fail, JobNotFound, JobState, NewJob
from awa.domain.defaults import STALENESS_S
from awa.ports import ClaimStore, Finish
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _one
from awa.testing.scenarios import drive_to

__all__ = ["MaintenanceContract"]


class MaintenanceContract(StoreFixtures):
    """Promotion, retention and leadership."""

    def test_promote_makes_due_jobs_available(self, store: ClaimStore, clock: ManualClock) -> None:
        job = _one(store, run_at=clock.now() + timedelta(seconds=5))
        assert store.promote() == []
        clock.advance(5)
        [promoted] = store.promote()
        assert promoted.id == job.id
        assert store.get_job(job.id).state is JobState.AVAILABLE

    def test_delete_finished_removes_only_old_terminal_jobs(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        done = drive_to(store, clock, JobState.COMPLETED).job
        cancelled = drive_to(store, clock, JobState.CANCELLED).job
        running = drive_to(store, clock, JobState.RUNNING).job
        clock.advance(100)
        fresh = drive_to(store, clock, JobState.COMPLETED).job
        assert store.delete_finished(older_than_s=50) == 2
        for gone in (done, cancelled):
            with pytest.raises(JobNotFound):
                store.get_job(gone.id)
        assert store.get_job(running.id).state is JobState.RUNNING
        assert store.get_job(fresh.id).state is JobState.COMPLETED
        assert store.delete_finished(older_than_s=50) == 0

    def test_a_failed_or_cancelled_job_outlives_a_completed_one_of_the_same_age(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        # awa.domain.retention: failed and cancelled jobs are held to failed_older_than_s
        done = drive_to(store, clock, JobState.COMPLETED).job
        failed = drive_to(store, clock, JobState.FAILED).job  # the DLQ is off: it stays a job
        cancelled = drive_to(store, clock, JobState.CANCELLED).job
        clock.advance(100)
        assert store.delete_finished(older_than_s=50, failed_older_than_s=500) == 1
        with pytest.raises(JobNotFound):
            store.get_job(done.id)
        assert store.get_job(failed.id).state is JobState.FAILED
        assert store.get_job(cancelled.id).state is JobState.CANCELLED
        clock.advance(400)
        assert store.delete_finished(older_than_s=50, failed_older_than_s=500) == 0
        clock.advance(0.000001)
        assert store.delete_finished(older_than_s=50, failed_older_than_s=500) == 2
        assert store.count_jobs() == 0

    def test_both_retentions_together_stay_within_one_batch(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        for state in (JobState.COMPLETED, JobState.FAILED) * 2:
            drive_to(store, clock, state)
        clock.advance(100)
        assert store.delete_finished(older_than_s=1, failed_older_than_s=1, limit=3) == 3
        assert store.delete_finished(older_than_s=1, failed_older_than_s=1, limit=3) == 1

    def test_promote_is_bounded_and_takes_the_earliest_due_first(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        later = _one(store, run_at=clock.now() + timedelta(seconds=5))
        earlier = _one(store, run_at=clock.now() + timedelta(seconds=3))
        clock.advance(5)
        assert [job.id for job in store.promote(limit=1)] == [earlier.id]
        assert [job.id for job in store.promote(limit=1)] == [later.id]

    def test_promote_and_claim_take_a_job_due_this_very_instant(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        first = _one(store, queue="direct", run_at=clock.now() + timedelta(seconds=5))
        second = _one(store, run_at=clock.now() + timedelta(seconds=5))
        clock.advance(5)
        assert _claim_one(store, "direct").id == first.id
        assert [job.id for job in store.promote()] == [second.id]

    def test_retention_keeps_what_is_exactly_as_old_as_the_limit(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("dead", True)
        _one(store, queue="dead")
        _finish(store, _claim_one(store, "dead").lease, Fail("x", terminal=True))
        done = drive_to(store, clock, JobState.COMPLETED).job
        clock.advance(50)
        assert store.delete_finished(older_than_s=50) == 0
        assert store.expire_dlq(older_than_s=50) == 0
        clock.advance(0.000001)
        assert store.delete_finished(older_than_s=50) == 1
        assert store.expire_dlq(older_than_s=50) == 1
        with pytest.raises(JobNotFound):
            store.get_job(done.id)

    def test_retention_in_small_batches_takes_the_oldest_first(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("dead", True)
        first_done = drive_to(store, clock, JobState.COMPLETED).job
        _one(store, queue="dead")
        first_dead = _claim_one(store, "dead")
        _finish(store, first_dead.lease, Fail("x", terminal=True))
        clock.advance(10)
        second_done = drive_to(store, clock, JobState.COMPLETED).job
        _one(store, queue="dead")
        second_dead = _claim_one(store, "dead")
        _finish(store, second_dead.lease, Fail("x", terminal=True))
        clock.advance(100)
        assert store.delete_finished(older_than_s=50, limit=1) == 1
        assert store.expire_dlq(older_than_s=50, limit=1) == 1
        with pytest.raises(JobNotFound):
            store.get_job(first_done.id)
        assert store.get_job(second_done.id).state is JobState.COMPLETED
        assert [entry.job.id for entry in store.list_dlq(queue="dead")] == [second_dead.id]

    def test_delete_finished_is_bounded_and_leaves_the_dlq_alone(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("kept", True)
        store.insert([NewJob(kind="k", queue="kept"), NewJob(kind="k"), NewJob(kind="k")])
        for queue in ("kept", "default", "default"):
            _finish(store, _claim_one(store, queue).lease, Fail("x", terminal=True))
        clock.advance(10)
        assert store.delete_finished(older_than_s=1, limit=1) == 1
        assert store.delete_finished(older_than_s=1, limit=10) == 1
        assert len(store.list_dlq(queue="kept")) == 1

    def test_expire_dlq_removes_old_entries(self, store: ClaimStore, clock: ManualClock) -> None:
        store.set_dlq_enabled("d", True)
        store.insert([NewJob(kind="k", queue="d") for _ in range(2)])
        _finish(store, _claim_one(store, "d").lease, Fail("x", terminal=True))
        clock.advance(100)
        _finish(store, _claim_one(store, "d").lease, Fail("x", terminal=True))
        assert store.expire_dlq(older_than_s=50, limit=1) == 1
        assert len(store.list_dlq(queue="d")) == 1
        clock.advance(100)
        assert store.expire_dlq(older_than_s=50, limit=1) == 1
        assert store.list_dlq(queue="d") == []

    def test_releasing_a_leadership_nobody_holds_does_nothing(self, store: ClaimStore) -> None:
        store.release_lead("nobody")
        assert store.try_lead("first", ttl_s=30)

    def test_bounded_verbs_take_their_documented_default_batch(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("bulk", True)
        later = clock.now() + timedelta(seconds=5)
        store.insert([NewJob(kind="k", queue="bulk", max_attempts=1, run_at=later)] * 1001)
        store.insert([NewJob(kind="k", queue="done")] * 1001)
        assert len(store.list_jobs()) == 100
        clock.advance(5)
        assert (len(store.promote()), len(store.promote())) == (1000, 1)
        assert len(store.claim("bulk", limit=1001)) == 1001
        done = store.claim("done", limit=1001)
        store.finish([Finish(job.lease, Complete()) for job in done])
        clock.advance(STALENESS_S + 1)
        assert (len(store.rescue()), len(store.rescue())) == (1000, 1)
        assert len(store.list_dlq()) == 100
        clock.advance(10)
        assert (store.expire_dlq(older_than_s=1), store.expire_dlq(older_than_s=1)) == (1000, 1)
        assert (store.delete_finished(older_than_s=1), store.delete_finished(older_than_s=1)) == (
            1000,
            1,
        )

    def test_one_leader_at_a_time(self, store: ClaimStore) -> None:
        assert store.try_lead("worker-a", ttl_s=30)
        assert store.try_lead("worker-a", ttl_s=30)  # the holder renews
        assert not store.try_lead("worker-b", ttl_s=30)
        store.release_lead("worker-b")  # not the holder: no effect
        assert not store.try_lead("worker-b", ttl_s=30)
        store.release_lead("worker-a")
        assert store.try_lead("worker-b", ttl_s=30)
        assert not store.try_lead("worker-a", ttl_s=30)
        store.release_lead("worker-b")
