"""The contract of callbacks: register, resolve and heartbeat a pending callback.

A parked attempt is answered at most once (resume, complete, fail, retry), even by racing
answers or an answer that arrives before the park; a late, unknown or stale callback id is
``CallbackNotFound``.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import (
    CallbackNotFound,
    Complete,
    CompleteCallback,
    DlqReason,
    FailCallback,
    JobState,
    Lease,
    NewJob,
    RescueCause,
    ResumeCallback,
    RetryAfter,
    RetryCallback,
    ValidationError,
    WaitForCallback,
)
from awa.domain.values import CallbackToken
from awa.ports import Applied, ClaimStore, Heartbeat, Stale, StaleReason
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _one, _park
from awa.testing.scenarios import STALENESS_S

__all__ = ["CallbackContract"]


class CallbackContract(StoreFixtures):
    """An attempt parked on an external answer resolves at most once."""

    def test_resume_returns_the_parked_attempt_to_running_with_the_payload(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store)
        callback_id = _park(store, job)
        assert store.get_job(job.id).state is JobState.WAITING_EXTERNAL
        clock.advance(500)
        resumed = store.resolve_callback(callback_id, ResumeCallback({"ok": 1}))
        assert resumed.state is JobState.RUNNING
        assert resumed.run_lease == job.run_lease
        assert resumed.callback_result == {"ok": 1}
        assert resumed.heartbeat_at == clock.now()
        assert (resumed.callback_id, resumed.callback_timeout_at) == (None, None)
        assert store.get_job(job.id) == resumed
        # time spent parked does not count against the attempt's deadline
        assert job.deadline_at is not None
        assert resumed.deadline_at == clock.now() + (
            job.deadline_at - (job.attempted_at or clock.now())
        )
        assert isinstance(_finish(store, job.lease, Complete()), Applied)

    def test_resume_of_an_attempt_claimed_without_a_deadline_keeps_none(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store, deadline_duration_s=0)
        assert job.deadline_at is None
        callback_id = _park(store, job)
        clock.advance(30)
        resumed = store.resolve_callback(callback_id, ResumeCallback("go on"))
        assert (resumed.state, resumed.deadline_at) == (JobState.RUNNING, None)
        assert isinstance(_finish(store, job.lease, Complete()), Applied)

    def test_a_new_attempt_or_a_new_callback_starts_with_no_callback_result(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store, max_attempts=3)
        job = _claim_one(store)
        store.resolve_callback(_park(store, job), ResumeCallback({"first": 1}))
        again = store.register_callback(job.lease, timeout_s=60)
        assert isinstance(again, Applied)
        assert again.job.callback_result is None, "a new callback must not show the last answer"
        store.resolve_callback(again.job.callback_id or "", ResumeCallback({"second": 2}))
        assert store.get_job(job.id).callback_result == {"second": 2}
        assert isinstance(_finish(store, job.lease, RetryAfter(1)), Applied)
        clock.advance(1)
        reclaimed = _claim_one(store)
        assert (reclaimed.id, reclaimed.callback_result) == (job.id, None)

    def test_a_callback_id_pending_on_another_attempt_is_refused(self, store: ClaimStore) -> None:
        store.insert([NewJob(kind="k"), NewJob(kind="k")])
        first, second = _claim_one(store), _claim_one(store)
        assert isinstance(store.register_callback(first.lease, callback_id="order-7"), Applied)
        before = store.get_job(second.id)
        with pytest.raises(ValidationError, match="callback id 'order-7' is already pending"):
            store.register_callback(second.lease, callback_id="order-7")
        assert store.get_job(second.id) == before
        assert store.get_job(first.id).callback_id == "order-7"

    def test_a_callback_id_is_free_again_once_answered(self, store: ClaimStore) -> None:
        store.insert([NewJob(kind="k"), NewJob(kind="k")])
        first, second = _claim_one(store), _claim_one(store)
        assert isinstance(store.register_callback(first.lease, callback_id="order-42"), Applied)
        store.resolve_callback("order-42", ResumeCallback())
        reused = store.register_callback(second.lease, callback_id="order-42")
        assert isinstance(reused, Applied), "an answered callback id is not pending any more"
        done = store.resolve_callback("order-42", CompleteCallback())
        assert (done.id, done.state) == (second.id, JobState.COMPLETED)
        assert store.get_job(first.id).state is JobState.RUNNING

    def test_callback_resolves_at_most_once(self, store: ClaimStore) -> None:
        _one(store)
        job = _claim_one(store)
        callback_id = _park(store, job)
        done = store.resolve_callback(callback_id, CompleteCallback({"v": 1}))
        assert done.state is JobState.COMPLETED
        assert done.callback_result == {"v": 1}
        for resolution in (
            CompleteCallback(),
            FailCallback("x"),
            ResumeCallback(),
            RetryCallback(),
        ):
            with pytest.raises(CallbackNotFound):
                store.resolve_callback(callback_id, resolution)
        assert store.get_job(job.id) == done

    def test_concurrent_resolutions_have_exactly_one_winner(self, store: ClaimStore) -> None:
        _one(store)
        job = _claim_one(store)
        callback_id = _park(store, job)
        wins: list[str] = []
        barrier = threading.Barrier(6)

        def resolve(n: int) -> None:
            barrier.wait()
            try:
                store.resolve_callback(callback_id, CompleteCallback({"winner": n}))
                wins.append(str(n))
            except CallbackNotFound:
                pass

        threads = [threading.Thread(target=resolve, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(wins) == 1
        assert store.get_job(job.id).callback_result == {"winner": int(wins[0])}

    def test_external_answer_before_the_park_completes_the_running_job(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store)
        store.heartbeat([Heartbeat(job.lease, progress={"percent": 90})])
        registered = store.register_callback(job.lease)
        assert isinstance(registered, Applied)
        callback_id = registered.job.callback_id
        assert callback_id is not None
        clock.advance(3)
        done = store.resolve_callback(callback_id, CompleteCallback({"early": True}))
        assert (done.finalized_at, done.progress) == (clock.now(), None)
        assert (done.deadline_at, done.callback_id, done.callback_timeout_at) == (None, None, None)
        token = CallbackToken(callback_id, job.lease, job.run_at)
        assert isinstance(_finish(store, job.lease, WaitForCallback(token)), Stale)
        assert store.get_job(job.id).state is JobState.COMPLETED

    def test_resume_before_the_park_is_reported_as_callback_resolved(
        self, store: ClaimStore
    ) -> None:
        _one(store)
        job = _claim_one(store)
        registered = store.register_callback(job.lease)
        assert isinstance(registered, Applied)
        callback_id = registered.job.callback_id
        assert callback_id is not None
        store.resolve_callback(callback_id, ResumeCallback("early"))
        token = CallbackToken(callback_id, job.lease, job.run_at)
        parked = _finish(store, job.lease, WaitForCallback(token))
        assert parked == Stale(job.lease, StaleReason.CALLBACK_RESOLVED)
        got = store.get_job(job.id)
        assert (got.state, got.callback_result) == (JobState.RUNNING, "early")

    def test_callback_retry_restarts_with_a_fresh_budget_and_the_lease_kept(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store, max_attempts=3)
        job = _claim_one(store)
        callback_id = _park(store, job)
        clock.advance(40)
        restarted = store.resolve_callback(callback_id, RetryCallback())
        assert restarted.state is JobState.AVAILABLE
        assert (restarted.attempt, restarted.run_lease) == (0, 1)
        assert restarted.run_at == clock.now(), "queued behind the jobs already waiting"
        assert (restarted.deadline_at, restarted.callback_id, restarted.callback_timeout_at) == (
            None,
            None,
            None,
        )
        assert store.get_job(job.id) == restarted
        again = _claim_one(store)
        assert (again.attempt, again.run_lease) == (1, 2)

    def test_callback_fail_fails_the_job_terminally(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("cb", True)
        _one(store, queue="cb")
        job = _claim_one(store, "cb")
        callback_id = _park(store, job)
        clock.advance(7)
        failed = store.resolve_callback(callback_id, FailCallback("card declined"))
        assert failed.state is JobState.FAILED
        assert failed.finalized_at == clock.now()
        assert failed.errors[-1].terminal
        [entry] = store.list_dlq(queue="cb")
        assert entry.reason == DlqReason.TERMINAL_ERROR.value
        assert entry.job.errors[-1].error == "card declined"

    def test_callback_fail_on_a_queue_without_a_dlq_keeps_the_job_in_place(
        self, store: ClaimStore
    ) -> None:
        _one(store, queue="never_configured")
        job = _claim_one(store, "never_configured")
        failed = store.resolve_callback(_park(store, job), FailCallback("declined"))
        assert failed.state is JobState.FAILED
        assert store.get_dlq_entry(job.id) is None
        assert store.list_jobs(queue="never_configured") == [failed]

    def test_callback_heartbeat_extends_the_timeout(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store)
        callback_id = _park(store, job, timeout_s=60)
        clock.advance(50)
        extended = store.heartbeat_callback(callback_id, timeout_s=60)
        assert extended.callback_timeout_at == clock.now() + timedelta(seconds=60)
        clock.advance(50)
        assert store.rescue(staleness_s=STALENESS_S) == []
        clock.advance(11)
        [rescued] = store.rescue(staleness_s=STALENESS_S)
        assert rescued.cause is RescueCause.CALLBACK_TIMEOUT

    def test_rescue_and_cancel_make_a_late_callback_unknown(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.insert([NewJob(kind="k"), NewJob(kind="k")])
        a = _claim_one(store)
        b = _claim_one(store)
        cb_a = _park(store, a, timeout_s=10)
        cb_b = _park(store, b, timeout_s=1000)
        clock.advance(11)
        store.rescue(staleness_s=STALENESS_S)
        store.cancel(b.id)
        for callback_id in (cb_a, cb_b):
            with pytest.raises(CallbackNotFound):
                store.resolve_callback(callback_id, CompleteCallback())
            with pytest.raises(CallbackNotFound):
                store.heartbeat_callback(callback_id, timeout_s=10)

    def test_a_park_after_the_attempt_ended_says_why_it_is_stale(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.insert([NewJob(kind="k"), NewJob(kind="k")])
        cancelled, rescued = _claim_one(store), _claim_one(store)
        for job in (cancelled, rescued):
            registered = store.register_callback(job.lease)
            assert isinstance(registered, Applied)
        store.cancel(cancelled.id)
        clock.advance(STALENESS_S + 1)
        store.rescue(staleness_s=STALENESS_S)
        for job, reason in (
            (cancelled, StaleReason.CANCELLED),
            (rescued, StaleReason.STATE_CHANGED),
        ):
            token = CallbackToken("cb-from-the-handler", job.lease, job.run_at)
            assert _finish(store, job.lease, WaitForCallback(token)) == Stale(job.lease, reason)

    def test_unknown_callback_id_is_not_found(self, store: ClaimStore) -> None:
        with pytest.raises(CallbackNotFound):
            store.resolve_callback("no-such-callback", CompleteCallback())

    def test_register_callback_with_stale_lease_is_stale(self, store: ClaimStore) -> None:
        _one(store)
        job = _claim_one(store)
        result = store.register_callback(Lease(job.id, job.run_lease + 1))
        assert isinstance(result, Stale)
        assert store.get_job(job.id).callback_id is None
