"""The contract of the dead-letter queue.

Dead-lettering only where enabled, one home per job, lookup, retry (one and bulk), purge, and
moving a failed job there by hand.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import Fail, IllegalTransition, JobNotFound, JobState, NewJob, ValidationError
from awa.ports import ClaimStore
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _one
from awa.testing.scenarios import drive_to

__all__ = ["DlqContract"]


class DlqContract(StoreFixtures):
    """Failed jobs on a dead-letter queue: one home, found, retried, purged."""

    def test_failed_jobs_stay_in_place_when_the_queue_has_no_dlq(self, store: ClaimStore) -> None:
        _one(store)
        job = _claim_one(store)
        _finish(store, job.lease, Fail("x", terminal=True))
        assert store.list_dlq(queue="default") == []
        assert store.list_jobs(state=JobState.FAILED)[0].id == job.id

    def test_pause_and_dead_letter_settings_are_independent(self, store: ClaimStore) -> None:
        store.pause_queue("held")
        store.resume_queue("held")
        store.set_dlq_enabled("kept", True)
        [held] = [s for s in store.queue_stats() if s.queue == "held"]
        [kept] = [s for s in store.queue_stats() if s.queue == "kept"]
        assert (held.paused, held.dlq_enabled) == (False, False)
        assert (kept.paused, kept.dlq_enabled) == (False, True)
        _one(store, queue="held")
        job = _claim_one(store, "held")
        _finish(store, job.lease, Fail("x", terminal=True))
        assert store.get_dlq_entry(job.id) is None, "pausing a queue gave it a dead-letter queue"

    def test_list_dlq_filters_by_queue_and_kind_newest_first(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        for queue in ("d1", "d2"):
            store.set_dlq_enabled(queue, True)
        ids: dict[tuple[str, str], list[int]] = {}
        for queue, kind in (("d1", "a"), ("d1", "b"), ("d2", "a"), ("d1", "a")):
            _one(store, queue=queue, kind=kind)
            job = _claim_one(store, queue)
            _finish(store, job.lease, Fail("x", terminal=True))
            ids.setdefault((queue, kind), []).append(job.id)
            clock.advance(1)

        def listed(**filters: str) -> list[int]:
            return [entry.job.id for entry in store.list_dlq(**filters)]  # type: ignore[arg-type]

        assert listed(queue="d1", kind="a") == ids[("d1", "a")][::-1]
        assert listed(kind="a") == sorted(ids[("d1", "a")] + ids[("d2", "a")], reverse=True)
        assert listed(queue="d1") == sorted(ids[("d1", "a")] + ids[("d1", "b")], reverse=True)
        assert listed(queue="d2", kind="b") == []
        [newest] = store.list_dlq(kind="a", limit=1)
        assert newest.job.id == ids[("d1", "a")][-1]
        retried = store.bulk_retry_from_dlq(kind="b")  # a kind alone is filter enough
        assert [job.id for job in retried] == ids[("d1", "b")]
        retried = store.bulk_retry_from_dlq(queue="d1")  # oldest first
        assert [job.id for job in retried] == ids[("d1", "a")]
        assert store.purge_dlq(kind="b") == 0
        assert store.purge_dlq(kind="a") == 1
        assert store.list_dlq() == []

    def test_dead_lettering_one_job_moves_no_other_failed_job(self, store: ClaimStore) -> None:
        store.set_dlq_enabled("dead", True)
        store.insert([NewJob(kind="k", queue="kept"), NewJob(kind="k", queue="dead")])
        kept, dead = _claim_one(store, "kept"), _claim_one(store, "dead")
        _finish(store, kept.lease, Fail("x", terminal=True))
        _finish(store, dead.lease, Fail("x", terminal=True))
        assert [entry.job.id for entry in store.list_dlq()] == [dead.id]
        assert store.list_jobs(state=JobState.FAILED) == [store.get_job(kept.id)]

    def test_dlq_job_lives_in_exactly_one_home(self, store: ClaimStore) -> None:
        store.set_dlq_enabled("d", True)
        _one(store, queue="d")
        job = _claim_one(store, "d")
        _finish(store, job.lease, Fail("x", terminal=True))
        assert store.list_jobs(queue="d") == []
        [entry] = store.list_dlq(queue="d")
        assert entry.job.run_lease == job.run_lease
        assert store.get_job(job.id) == entry.job

    def test_get_dlq_entry_finds_a_dead_lettered_job_and_only_that(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("d", True)
        store.insert([NewJob(kind="k", queue="d"), NewJob(kind="k", queue="d")])
        dead = _claim_one(store, "d")
        _finish(store, dead.lease, Fail("ValueError: x", terminal=True))
        alive = store.list_jobs(queue="d")[0]
        entry = store.get_dlq_entry(dead.id)
        assert entry is not None
        assert (entry.job.id, entry.reason, entry.dlq_at) == (
            dead.id,
            "terminal_error",
            clock.now(),
        )
        assert store.get_dlq_entry(alive.id) is None
        assert store.get_dlq_entry(424242) is None
        store.retry_from_dlq(dead.id)
        assert store.get_dlq_entry(dead.id) is None

    def test_dlq_retry_resets_attempts_keeps_lease_and_errors(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("d", True)
        _one(store, queue="d", max_attempts=1)
        job = _claim_one(store, "d")
        _finish(store, job.lease, Fail("boom"))
        clock.advance(60)
        retried = store.retry_from_dlq(job.id)
        assert retried.state is JobState.AVAILABLE
        assert (retried.run_at, retried.finalized_at) == (clock.now(), None)
        assert store.get_job(job.id) == retried
        assert (retried.attempt, retried.run_lease) == (0, 1)
        assert [e.error for e in retried.errors] == ["boom"]
        assert store.list_dlq(queue="d") == []
        assert _claim_one(store, "d").run_lease == 2

    def test_dlq_retry_at_a_later_run_at_waits_for_it_and_one_past_runs_now(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("d", True)
        for _ in range(3):
            _one(store, queue="d", max_attempts=1)
            _finish(store, _claim_one(store, "d").lease, Fail("boom"))
        [first, second, third] = sorted(e.job.id for e in store.list_dlq(queue="d"))
        later = clock.now() + timedelta(hours=2)
        waiting = store.retry_from_dlq(first, run_at=later)
        assert (waiting.state, waiting.run_at, waiting.attempt) == (JobState.SCHEDULED, later, 0)
        now = store.retry_from_dlq(second, run_at=clock.now() - timedelta(hours=1))
        assert (now.state, now.run_at) == (JobState.AVAILABLE, clock.now())
        [bulk] = store.bulk_retry_from_dlq(queue="d", run_at=later)
        assert (bulk.id, bulk.state, bulk.run_at) == (third, JobState.SCHEDULED, later)
        assert [job.id for job in store.claim("d", limit=10)] == [second]
        clock.set(later)
        assert sorted(job.id for job in store.claim("d", limit=10)) == [first, third]

    def test_operator_retry_of_a_dead_lettered_job_retries_from_the_dlq(
        self, store: ClaimStore
    ) -> None:
        store.set_dlq_enabled("d", True)
        _one(store, queue="d")
        job = _claim_one(store, "d")
        _finish(store, job.lease, Fail("x", terminal=True))
        assert store.retry(job.id).state is JobState.AVAILABLE
        assert store.list_dlq(queue="d") == []

    def test_dead_lettered_job_is_not_cancellable(self, store: ClaimStore) -> None:
        store.set_dlq_enabled("d", True)
        _one(store, queue="d")
        job = _claim_one(store, "d")
        _finish(store, job.lease, Fail("x", terminal=True))
        with pytest.raises(IllegalTransition):
            store.cancel(job.id)
        assert len(store.list_dlq(queue="d")) == 1

    def test_bulk_dlq_commands_need_a_filter_or_all(self, store: ClaimStore) -> None:
        store.set_dlq_enabled("d", True)
        _one(store, queue="d")
        job = _claim_one(store, "d")
        _finish(store, job.lease, Fail("x", terminal=True))
        with pytest.raises(ValidationError, match="give a queue or kind"):
            store.bulk_retry_from_dlq()
        with pytest.raises(ValidationError, match="give a queue or kind"):
            store.purge_dlq()
        assert len(store.list_dlq(queue="d")) == 1

    def test_bulk_retry_and_purge_touch_only_matching_entries(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        for queue in ("d1", "d2"):
            store.set_dlq_enabled(queue, True)
        store.insert(
            [
                NewJob(kind="a", queue="d1"),
                NewJob(kind="b", queue="d1"),
                NewJob(kind="a", queue="d2"),
            ]
        )
        for queue in ("d1", "d1", "d2"):
            job = _claim_one(store, queue)
            _finish(store, job.lease, Fail("x", terminal=True))
        retried = store.bulk_retry_from_dlq(queue="d1", kind="a")
        assert [(j.queue, j.kind, j.attempt) for j in retried] == [("d1", "a", 0)]
        assert store.purge_dlq(queue="d1") == 1
        assert [e.job.queue for e in store.list_dlq(kind="a")] == ["d2"]
        assert len(store.bulk_retry_from_dlq(all=True)) == 1
        assert store.list_dlq() == []

    def test_move_to_dlq_takes_only_failed_jobs(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        running = drive_to(store, clock, JobState.RUNNING)
        with pytest.raises(IllegalTransition):
            store.move_to_dlq(running.job.id, reason="operator")
        failed = drive_to(store, clock, JobState.FAILED)
        entry = store.move_to_dlq(failed.job.id, reason="needs a human")
        assert entry.reason == "needs a human"
        assert store.list_dlq(queue=failed.job.queue)[0].job.id == failed.job.id
        with pytest.raises(ValidationError):
            store.move_to_dlq(running.job.id, reason="  ")

    def test_purge_one_dead_letter_entry(self, store: ClaimStore) -> None:
        store.set_dlq_enabled("d", True)
        store.insert([NewJob(kind="k", queue="d") for _ in range(2)])
        ids = []
        for _ in range(2):
            job = _claim_one(store, "d")
            _finish(store, job.lease, Fail("x", terminal=True))
            ids.append(job.id)
        store.purge_dlq_job(ids[0])
        assert [e.job.id for e in store.list_dlq()] == [ids[1]]
        with pytest.raises(JobNotFound):
            store.purge_dlq_job(ids[0])
        [alive] = store.insert([NewJob(kind="k")])
        with pytest.raises(JobNotFound):
            store.purge_dlq_job(alive.id)  # only dead letters are purged
        assert store.get_job(alive.id) == alive

    def test_list_dlq_pages_newest_first_with_before_id(self, store: ClaimStore) -> None:
        store.set_dlq_enabled("d", True)
        store.insert([NewJob(kind="k", queue="d") for _ in range(5)])
        for _ in range(5):
            _finish(store, _claim_one(store, "d").lease, Fail("x", terminal=True))
        first = store.list_dlq(limit=2)
        second = store.list_dlq(limit=2, before_id=first[-1].job.id)
        third = store.list_dlq(limit=2, before_id=second[-1].job.id)
        ids = [e.job.id for e in [*first, *second, *third]]
        assert ids == sorted(ids, reverse=True)
        assert len(set(ids)) == 5
