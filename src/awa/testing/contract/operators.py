"""The contract of the operator verbs: cancel, retry, get and list jobs, queue stats."""

from __future__ import annotations

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import Fail, IllegalTransition, JobNotFound, JobState, NewJob, ValidationError
from awa.ports import ClaimStore
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish
from awa.testing.scenarios import drive_to

__all__ = ["OperatorContract"]


class OperatorContract(StoreFixtures):
    """What an operator can do to a job, and what they can see."""

    @pytest.mark.parametrize(
        "state",
        [
            JobState.SCHEDULED,
            JobState.AVAILABLE,
            JobState.RUNNING,
            JobState.WAITING_EXTERNAL,
            JobState.RETRYABLE,
        ],
    )
    def test_cancel_stops_any_job_not_yet_finished(
        self, store: ClaimStore, clock: ManualClock, state: JobState
    ) -> None:
        driven = drive_to(store, clock, state)
        cancelled = store.cancel(driven.job.id)
        assert cancelled.state is JobState.CANCELLED
        assert cancelled.finalized_at == clock.now()
        assert cancelled.callback_id is None

    @pytest.mark.parametrize("state", [JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED])
    def test_cancel_of_a_finished_job_says_not_cancellable_and_changes_nothing(
        self, store: ClaimStore, clock: ManualClock, state: JobState
    ) -> None:
        driven = drive_to(store, clock, state)
        with pytest.raises(IllegalTransition, match=f"is {state.value}; cancel needs"):
            store.cancel(driven.job.id)
        assert store.get_job(driven.job.id) == driven.job

    def test_operator_retry_gives_a_fresh_budget_and_keeps_history(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        driven = drive_to(store, clock, JobState.FAILED)
        retried = store.retry(driven.job.id)
        assert retried.state is JobState.AVAILABLE
        assert retried.attempt == 0
        assert retried.run_lease == driven.job.run_lease
        assert retried.errors == driven.job.errors
        assert retried.finalized_at is None

    def test_unknown_job_ids_raise_job_not_found(self, store: ClaimStore) -> None:
        for action in (store.get_job, store.cancel, store.retry, store.retry_from_dlq):
            with pytest.raises(JobNotFound, match="job 424242 not found"):
                action(424242)
        with pytest.raises(JobNotFound):
            store.move_to_dlq(424242, reason="x")

    def test_list_jobs_filters_and_limits(self, store: ClaimStore) -> None:
        store.insert(
            [
                NewJob(kind="a", queue="q1"),
                NewJob(kind="b", queue="q1"),
                NewJob(kind="a", queue="q2"),
            ]
        )
        _claim_one(store, "q2")
        assert [j.kind for j in store.list_jobs(queue="q1")] == ["a", "b"]
        assert [j.queue for j in store.list_jobs(kind="a")] == ["q1", "q2"]
        assert [j.queue for j in store.list_jobs(state=JobState.RUNNING)] == ["q2"]
        assert len(store.list_jobs(limit=2)) == 2
        with pytest.raises(ValidationError):
            store.list_jobs(queue="NOT VALID")

    def test_list_jobs_by_tag_and_newest_first_in_pages(self, store: ClaimStore) -> None:
        jobs = store.insert(
            [NewJob(kind="k", tags=("red",) if i % 2 else ("blue", "x")) for i in range(7)]
        )
        ids = [job.id for job in jobs]
        assert [j.id for j in store.list_jobs(tag="red")] == ids[1::2]
        assert [j.id for j in store.list_jobs(tag="x")] == ids[0::2]
        assert store.list_jobs(tag="re") == []  # a whole tag, not a substring
        first = store.list_jobs(newest_first=True, limit=3)
        assert [j.id for j in first] == ids[::-1][:3]
        second = store.list_jobs(newest_first=True, limit=3, before_id=first[-1].id)
        assert [j.id for j in second] == ids[::-1][3:6]
        last = store.list_jobs(newest_first=True, limit=3, before_id=second[-1].id)
        assert [j.id for j in last] == ids[:1]
        assert store.list_jobs(newest_first=True, before_id=ids[0]) == []
        assert [j.id for j in store.list_jobs(tag="red", newest_first=True, limit=2)] == [
            ids[5],
            ids[3],
        ]
        assert [j.id for j in store.list_jobs(before_id=ids[2])] == ids[:2]

    def test_queue_stats_count_states_dlq_and_pause(self, store: ClaimStore) -> None:
        store.set_dlq_enabled("stats", True)
        store.insert([NewJob(kind="k", queue="stats") for _ in range(3)])
        job = _claim_one(store, "stats")
        _finish(store, job.lease, Fail("x", terminal=True))
        store.pause_queue("stats")
        [stats] = [s for s in store.queue_stats() if s.queue == "stats"]
        assert stats.counts[JobState.AVAILABLE] == 2
        assert stats.counts[JobState.FAILED] == 0
        assert stats.dlq_depth == 1
        assert stats.paused
        assert stats.dlq_enabled
        assert stats.oldest_available_at is not None
