"""The contract of the operator verbs: cancel, retry, get and list jobs (paged), queue stats,
and the bulk verbs: retry or discard failed jobs, drain a queue."""

from __future__ import annotations

from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import Fail, IllegalTransition, JobNotFound, JobState, NewJob, ValidationError
from awa.ports import BATCH_SIZE_MAX, ClaimStore
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _one
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
        clock.advance(90)
        retried = store.retry(driven.job.id)
        assert retried.run_at == clock.now(), "queued behind the jobs already waiting"
        assert retried.state is JobState.AVAILABLE
        assert retried.attempt == 0
        assert retried.run_lease == driven.job.run_lease
        assert retried.errors == driven.job.errors
        assert retried.finalized_at is None

    def test_retry_failed_at_a_later_run_at_schedules_every_match(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        failed = [drive_to(store, clock, JobState.FAILED, queue="later").job for _ in range(2)]
        cancelled = drive_to(store, clock, JobState.CANCELLED, queue="later").job
        later = clock.now() + timedelta(minutes=30)
        retried = store.retry_failed(queue="later", run_at=later)
        assert sorted(job.id for job in retried) == sorted(job.id for job in failed)
        assert {(job.state, job.run_at) for job in retried} == {(JobState.SCHEDULED, later)}
        assert store.retry(cancelled.id, run_at=later).state is JobState.SCHEDULED
        assert store.claim("later", limit=10) == []
        clock.set(later)
        assert len(store.claim("later", limit=10)) == 3

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
        assert [j.kind for j in store.list_jobs(queue="q1")] == ["b", "a"]  # newest first
        assert [j.queue for j in store.list_jobs(kind="a")] == ["q2", "q1"]
        assert [j.queue for j in store.list_jobs(state=JobState.RUNNING)] == ["q2"]
        assert len(store.list_jobs(limit=2)) == 2
        with pytest.raises(ValidationError):
            store.list_jobs(queue="NOT VALID")

    def test_list_jobs_pages_with_before_id(self, store: ClaimStore) -> None:
        inserted = store.insert([NewJob(kind="page", args={"n": n}) for n in range(7)])
        pages, before = [], None
        while page := store.list_jobs(kind="page", limit=3, before_id=before):
            pages.append([j.args["n"] for j in page])
            before = page[-1].id
        assert pages == [[6, 5, 4], [3, 2, 1], [0]]
        assert store.list_jobs(before_id=inserted[0].id) == []

    def test_count_jobs_counts_what_list_jobs_would_list_without_a_limit(
        self, store: ClaimStore
    ) -> None:
        store.insert([NewJob(kind="a", queue="q1") for _ in range(3)])
        store.insert([NewJob(kind="b", queue="q2")])
        _claim_one(store, "q2")
        assert store.count_jobs() == 4
        assert store.count_jobs(queue="q1") == 3
        assert store.count_jobs(kind="b") == 1
        assert store.count_jobs(state=JobState.AVAILABLE) == 3
        assert store.count_jobs(state=JobState.RUNNING, queue="q1") == 0
        assert store.count_jobs(kind="nothing") == 0

    def test_list_jobs_by_tag_in_pages(self, store: ClaimStore) -> None:
        jobs = store.insert(
            [NewJob(kind="k", tags=("red",) if i % 2 else ("blue", "x")) for i in range(7)]
        )
        newest_first = [job.id for job in reversed(jobs)]
        assert [j.id for j in store.list_jobs(tag="red")] == newest_first[1::2]
        assert [j.id for j in store.list_jobs(tag="x")] == newest_first[0::2]
        assert store.list_jobs(tag="re") == []  # a whole tag, not a substring
        first = store.list_jobs(tag="x", limit=2)
        assert [j.id for j in first] == newest_first[0:3:2]
        rest = store.list_jobs(tag="x", limit=2, before_id=first[-1].id)
        assert [j.id for j in rest] == newest_first[4::2]

    def test_queue_stats_are_per_queue(self, store: ClaimStore, clock: ManualClock) -> None:
        store.set_dlq_enabled("left", True)
        store.set_dlq_enabled("right", True)
        first = _one(store, queue="left")
        clock.advance(5)
        _one(store, queue="left")
        for queue in ("right", "right"):
            _one(store, queue=queue)
        _finish(store, _claim_one(store, "right").lease, Fail("x", terminal=True))
        _claim_one(store, "right")
        _one(store, queue="plain")  # a queue nobody configured
        listed = store.queue_stats()
        assert [s.queue for s in listed] == sorted(s.queue for s in listed)
        stats = {s.queue: s for s in listed}
        left, right = stats["left"], stats["right"]
        assert (stats["plain"].paused, stats["plain"].dlq_enabled) == (False, False)
        assert (left.counts[JobState.AVAILABLE], left.counts[JobState.RUNNING]) == (2, 0)
        assert (right.counts[JobState.AVAILABLE], right.counts[JobState.RUNNING]) == (0, 1)
        assert (left.dlq_depth, right.dlq_depth) == (0, 1)
        assert left.oldest_available_at == first.run_at
        assert right.oldest_available_at is None

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

    def _failed(self, store: ClaimStore, *specs: tuple[str, str]) -> list[int]:
        """One failed job per ``(queue, kind)``, in order."""
        store.insert([NewJob(kind=kind, queue=queue) for queue, kind in specs])
        failed = []
        for queue, _ in specs:
            job = _claim_one(store, queue)
            _finish(store, job.lease, Fail("x", terminal=True))
            failed.append(job.id)
        return failed

    def test_retry_failed_retries_every_match_with_a_fresh_budget(self, store: ClaimStore) -> None:
        a, b, c = self._failed(store, ("q1", "a"), ("q1", "b"), ("q2", "a"))
        retried = store.retry_failed(kind="a")
        assert sorted(j.id for j in retried) == [a, c]
        assert all((j.state, j.attempt) == (JobState.AVAILABLE, 0) for j in retried)
        assert store.get_job(b).state is JobState.FAILED
        assert [j.id for j in store.retry_failed(queue="q1")] == [b]
        assert store.retry_failed(all=True) == []

    def test_discard_failed_deletes_only_failed_matches(self, store: ClaimStore) -> None:
        a, b = self._failed(store, ("q1", "a"), ("q2", "a"))
        [waiting] = store.insert([NewJob(kind="a", queue="q1")])
        assert store.discard_failed(queue="q1") == 1
        with pytest.raises(JobNotFound):
            store.get_job(a)
        assert store.get_job(waiting.id).state is JobState.AVAILABLE
        assert store.discard_failed(all=True) == 1
        with pytest.raises(JobNotFound):
            store.get_job(b)

    def test_discard_failed_by_kind_keeps_other_kinds(self, store: ClaimStore) -> None:
        a, b = self._failed(store, ("q1", "a"), ("q1", "b"))
        assert store.discard_failed(kind="b") == 1
        assert store.get_job(a).state is JobState.FAILED
        with pytest.raises(JobNotFound):
            store.get_job(b)

    def test_drain_queue_goes_on_past_a_full_batch(self, store: ClaimStore) -> None:
        for size in (BATCH_SIZE_MAX, 1):  # the bulk verbs work one full batch at a time
            store.insert([NewJob(kind="k", queue="big") for _ in range(size)])
        assert store.drain_queue("big") == BATCH_SIZE_MAX + 1
        assert store.count_jobs(state=JobState.CANCELLED) == BATCH_SIZE_MAX + 1

    def test_drain_queue_cancels_every_job_no_attempt_is_running(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        queue = "drained"
        # the states a claim leads to first, so that no claim takes an earlier job
        states = [JobState.RUNNING, JobState.WAITING_EXTERNAL, JobState.RETRYABLE]
        states += [JobState.COMPLETED, JobState.SCHEDULED, JobState.AVAILABLE]
        driven = {s: drive_to(store, clock, s, queue=queue).job for s in states}
        [elsewhere] = store.insert([NewJob(kind="k", queue="other")])
        assert store.drain_queue(queue) == 4
        after = {s: store.get_job(job.id).state for s, job in driven.items()}
        assert after == {
            JobState.SCHEDULED: JobState.CANCELLED,
            JobState.AVAILABLE: JobState.CANCELLED,
            JobState.RUNNING: JobState.RUNNING,
            JobState.WAITING_EXTERNAL: JobState.CANCELLED,
            JobState.RETRYABLE: JobState.CANCELLED,
            JobState.COMPLETED: JobState.COMPLETED,
        }
        assert store.get_job(elsewhere.id).state is JobState.AVAILABLE
        assert store.drain_queue(queue) == 0
