"""The contract of ``rescue`` and ``release``: attempts that end without their handler's
outcome, because the worker died, overran, waited too long, or shut down first.

Stale heartbeats, passed deadlines and bounded rescue batches; a graceful shutdown's release
(row 22); the poison-job rule (every way an attempt ends spends one, so a poison job stops
after ``max_attempts`` with its reason).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import Complete, DlqReason, Fail, JobState, Lease, NewJob, RescueCause
from awa.domain.backoff import BACKOFF_MAX_S
from awa.ports import Applied, ClaimStore, Heartbeat, Stale, StaleReason
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _one, _park
from awa.testing.scenarios import STALENESS_S

__all__ = ["RescueContract"]


class RescueContract(StoreFixtures):
    """Crashed, overrunning and poison attempts end, each with its cause."""

    def test_crash_then_rescue_then_reclaim_with_the_next_lease(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        first = _claim_one(store)
        clock.advance(STALENESS_S + 1)
        [rescued] = store.rescue(staleness_s=STALENESS_S)
        assert rescued.cause is RescueCause.HEARTBEAT_STALE
        assert rescued.job.state is JobState.RETRYABLE
        assert rescued.job.errors[-1].error == "heartbeat stale: worker presumed dead"
        assert rescued.job.errors[-1].terminal is False
        clock.set(rescued.job.run_at)
        second = _claim_one(store)
        assert second.id == first.id
        assert (second.attempt, second.run_lease) == (2, 2)

    def test_deadline_rescue_records_hard_deadline_exceeded(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store, deadline_duration_s=60)
        clock.advance(61)
        store.heartbeat([Heartbeat(job.lease)])  # alive, but past its deadline
        [rescued] = store.rescue(staleness_s=STALENESS_S)
        assert rescued.cause is RescueCause.DEADLINE_EXCEEDED
        assert rescued.job.errors[-1].error == "hard deadline exceeded"

    def test_rescue_leaves_healthy_attempts_alone(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store, deadline_duration_s=0)
        for _ in range(5):
            clock.advance(STALENESS_S - 1)
            store.heartbeat([Heartbeat(job.lease)])
            assert store.rescue(staleness_s=STALENESS_S) == []
        assert store.get_job(job.id).state is JobState.RUNNING

    def test_rescue_waits_until_just_past_the_staleness_limit(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store, deadline_duration_s=0)
        clock.advance(STALENESS_S)  # exactly as old as allowed: still alive
        assert store.rescue(staleness_s=STALENESS_S) == []
        clock.advance(0.000001)
        [rescued] = store.rescue(staleness_s=STALENESS_S)
        assert (rescued.job.id, rescued.cause) == (job.id, RescueCause.HEARTBEAT_STALE)

    def test_rescue_waits_until_just_past_the_deadline(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store, deadline_duration_s=60)
        clock.advance(60)  # the deadline itself: not yet exceeded
        store.heartbeat([Heartbeat(job.lease)])
        assert store.rescue(staleness_s=STALENESS_S) == []
        clock.advance(0.000001)
        [rescued] = store.rescue(staleness_s=STALENESS_S)
        assert rescued.cause is RescueCause.DEADLINE_EXCEEDED

    def test_rescue_waits_until_just_past_the_callback_timeout(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store, deadline_duration_s=0)
        _park(store, job, timeout_s=30)
        clock.advance(30)
        assert store.rescue(staleness_s=STALENESS_S) == []
        clock.advance(0.000001)
        [rescued] = store.rescue(staleness_s=STALENESS_S)
        assert rescued.cause is RescueCause.CALLBACK_TIMEOUT

    def test_a_rescued_attempt_leaves_no_deadline_or_callback_behind(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("dead", True)
        _one(store, max_attempts=2)
        _one(store, queue="dead", max_attempts=1)
        retried, failed = _claim_one(store), _claim_one(store, "dead")
        _park(store, retried, timeout_s=10)
        _park(store, failed, timeout_s=10)
        clock.advance(11)
        by_id = {r.job.id: r for r in store.rescue(staleness_s=STALENESS_S)}
        again, dead = by_id[retried.id], by_id[failed.id]
        assert (again.job.state, again.dead_lettered) == (JobState.RETRYABLE, False)
        assert (dead.job.state, dead.dead_lettered) == (JobState.FAILED, True)
        assert dead.job.finalized_at == clock.now()
        assert again.job.finalized_at is None
        assert clock.now() + timedelta(seconds=2) <= again.job.run_at
        for rescued in (again, dead):
            job = rescued.job
            assert (job.deadline_at, job.callback_id, job.callback_timeout_at) == (None, None, None)
            assert store.get_job(job.id) == job
        entry = store.get_dlq_entry(failed.id)
        assert entry is not None
        assert (entry.reason, entry.job) == (DlqReason.CALLBACK_TIMEOUT.value, dead.job)

    def test_a_running_attempt_is_not_rescued_for_its_callback_timeout(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store)
        registered = store.register_callback(job.lease, timeout_s=10)
        assert isinstance(registered, Applied)
        clock.advance(30)  # the callback timed out, but the handler never parked: it is alive
        store.heartbeat([Heartbeat(job.lease)])
        assert store.rescue(staleness_s=STALENESS_S) == []
        assert store.get_job(job.id).state is JobState.RUNNING

    def test_rescue_is_bounded_per_call(self, store: ClaimStore, clock: ManualClock) -> None:
        store.insert([NewJob(kind="k") for _ in range(5)])
        store.claim("default", limit=5)
        clock.advance(STALENESS_S + 1)
        first = store.rescue(staleness_s=STALENESS_S, limit=2)
        rest = store.rescue(staleness_s=STALENESS_S, limit=10)
        ids = [r.job.id for r in (*first, *rest)]
        assert (len(first), len(rest)) == (2, 3)
        assert ids == sorted(ids), "in id order, so every store draws the same jitter"
        assert store.rescue(staleness_s=STALENESS_S) == []

    @pytest.mark.parametrize(
        ("how", "error", "reason"),
        [
            ("handler_error", "ValueError: poison", DlqReason.MAX_ATTEMPTS_EXHAUSTED),
            ("handler_panic", "handler panicked: SystemExit", DlqReason.MAX_ATTEMPTS_EXHAUSTED),
            ("stale_heartbeat", "heartbeat stale: worker presumed dead", DlqReason.HEARTBEAT_STALE),
            ("deadline", "hard deadline exceeded", DlqReason.DEADLINE_EXCEEDED),
            ("callback_timeout", "callback timed out", DlqReason.CALLBACK_TIMEOUT),
            ("terminal", "TerminalError: cannot parse", DlqReason.TERMINAL_ERROR),
        ],
    )
    def test_poison_job_stops_after_max_attempts_with_its_reason(
        self,
        store: ClaimStore,
        clock: ManualClock,
        how: str,
        error: str,
        reason: DlqReason,
    ) -> None:
        store.set_dlq_enabled("poison", True)
        job = _one(store, queue="poison", max_attempts=3)
        attempts = 0
        while store.list_dlq(queue="poison") == []:
            attempts += 1
            assert attempts <= 3, "a poison job must stop after max_attempts"
            clock.advance(BACKOFF_MAX_S)  # whatever the backoff, the retry is due now
            running = _claim_one(store, "poison", deadline_duration_s=60)
            assert running.attempt == attempts
            if how in ("handler_error", "handler_panic", "terminal"):
                _finish(store, running.lease, Fail(error, terminal=how == "terminal"))
            elif how == "stale_heartbeat":
                clock.advance(STALENESS_S + 1)
                store.rescue(staleness_s=STALENESS_S)
            elif how == "deadline":
                clock.advance(30)
                store.heartbeat([Heartbeat(running.lease)])
                clock.advance(31)
                store.heartbeat([Heartbeat(running.lease)])
                store.rescue(staleness_s=STALENESS_S)
            else:
                store.heartbeat([Heartbeat(running.lease)])
                _park(store, running, timeout_s=30)
                clock.advance(31)
                store.rescue(staleness_s=STALENESS_S)
        assert attempts == (1 if how == "terminal" else 3)
        [entry] = store.list_dlq(queue="poison")
        assert entry.reason == reason.value
        assert entry.job.id == job.id
        assert entry.job.state is JobState.FAILED
        assert [e.error for e in entry.job.errors] == [error] * attempts
        assert store.list_jobs(queue="poison") == []
        assert store.get_job(job.id) == entry.job

    def test_crash_with_one_attempt_fails_the_job(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        job = _one(store, max_attempts=1)
        _claim_one(store)
        clock.advance(STALENESS_S + 1)
        [rescued] = store.rescue(staleness_s=STALENESS_S)
        assert rescued.job.state is JobState.FAILED
        assert not rescued.dead_lettered
        assert store.get_job(job.id).state is JobState.FAILED

    # -- row 22: a worker shutting down releases what it still runs --------------------------
    def test_a_released_attempt_is_retried_at_once_and_counts(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store, max_attempts=3)
        job = _claim_one(store)
        clock.advance(12)  # it ran a while before its worker shut down
        [result] = store.release([job.lease])
        assert isinstance(result, Applied)
        released = result.job
        assert (released.state, released.attempt, released.run_at) == (
            JobState.RETRYABLE,
            1,
            clock.now(),
        )
        assert released.errors[-1].error == "worker shut down before the attempt finished"
        assert (released.deadline_at, released.callback_id, released.finalized_at) == (
            None,
            None,
            None,
        )
        again = _claim_one(store)  # due at once: no backoff
        assert (again.id, again.attempt, again.run_lease) == (job.id, 2, 2)

    def test_a_release_on_the_last_attempt_dead_letters_it_as_worker_shutdown(
        self, store: ClaimStore
    ) -> None:
        store.set_dlq_enabled("deploys", True)
        _one(store, queue="deploys", max_attempts=1)
        job = _claim_one(store, queue="deploys")
        [result] = store.release([job.lease])
        assert isinstance(result, Applied)
        assert result.job.state is JobState.FAILED
        assert result.job.finalized_at is not None
        entry = store.get_dlq_entry(job.id)
        assert entry is not None
        assert entry.reason == DlqReason.WORKER_SHUTDOWN.value == "worker_shutdown"

    def test_a_late_finish_after_a_release_changes_nothing(self, store: ClaimStore) -> None:
        _one(store)
        job = _claim_one(store)
        store.release([job.lease])
        before = store.get_job(job.id)
        assert _finish(store, job.lease, Complete()) == Stale(job.lease, StaleReason.STATE_CHANGED)
        assert store.get_job(job.id) == before

    def test_only_a_running_attempt_can_be_released(self, store: ClaimStore) -> None:
        _one(store)
        parked = _claim_one(store)
        _park(store, parked)
        _one(store)
        done = _claim_one(store)
        _finish(store, done.lease, Complete())
        before = [store.get_job(parked.id), store.get_job(done.id)]
        results = store.release([parked.lease, done.lease, Lease(parked.id, 99)])
        assert results == [
            Stale(parked.lease, StaleReason.STATE_CHANGED),
            Stale(done.lease, StaleReason.STATE_CHANGED),
            Stale(Lease(parked.id, 99), StaleReason.LEASE_SUPERSEDED),
        ]
        assert [store.get_job(parked.id), store.get_job(done.id)] == before
