"""The behavioural contract every ``ClaimStore`` adapter passes.

Subclass ``ClaimStoreContract`` in your adapter's tests and supply the store, built on the
``ManualClock`` the suite hands you::

    class TestMyStore(ClaimStoreContract):
        def make_store(self, clock: ManualClock) -> ClaimStore:
            return MyStore(..., clock=clock)

(or override the ``store`` fixture when building it needs other fixtures). The suite does not
know which store it tests. Part of it is generated from the transition table: every
``(state, trigger)`` pair is either applied as the table says or refused with no change.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import (
    TRANSITIONS,
    CallbackNotFound,
    Cancel,
    Complete,
    CompleteCallback,
    DlqReason,
    Fail,
    FailCallback,
    IllegalTransition,
    Job,
    JobNotFound,
    JobState,
    Lease,
    NewJob,
    RescueCause,
    ResumeCallback,
    RetryAfter,
    RetryCallback,
    Snooze,
    Trigger,
    ValidationError,
    WaitForCallback,
)
from awa.domain.backoff import BACKOFF_MAX_S
from awa.domain.values import CallbackToken
from awa.ports import (
    Applied,
    CallbackResolved,
    CancelRequested,
    ClaimStore,
    Event,
    Finish,
    Heartbeat,
    JobsAvailable,
    Stale,
    StaleReason,
)
from awa.testing.scenarios import STALENESS_S, drive_to, fire

__all__ = ["ClaimStoreContract"]


def _one(store: ClaimStore, queue: str = "default", **fields: object) -> Job:
    [job] = store.insert([NewJob(kind=str(fields.pop("kind", "work")), queue=queue, **fields)])  # type: ignore[arg-type]
    return job


def _claim_one(store: ClaimStore, queue: str = "default", **kwargs: float) -> Job:
    jobs = store.claim(queue, limit=1, **kwargs)
    assert len(jobs) == 1, f"expected one claim on {queue}, got {jobs}"
    return jobs[0]


def _finish(store: ClaimStore, lease: Lease, outcome: object) -> Applied | Stale:
    return store.finish([Finish(lease, outcome)])[0]  # type: ignore[arg-type]


def _park(store: ClaimStore, job: Job, timeout_s: float = 600.0) -> str:
    registered = store.register_callback(job.lease, timeout_s=timeout_s)
    assert isinstance(registered, Applied)
    callback_id = registered.job.callback_id
    assert callback_id is not None
    token = CallbackToken(callback_id, job.lease, registered.job.callback_timeout_at or job.run_at)
    assert isinstance(_finish(store, job.lease, WaitForCallback(token)), Applied)
    return callback_id


class _Events:
    """Collects a store's hints; tests wait on a condition, never a sleep."""

    def __init__(self) -> None:
        self.seen: list[Event] = []
        self._changed = threading.Condition()

    def __call__(self, event: Event) -> None:
        with self._changed:
            self.seen.append(event)
            self._changed.notify_all()

    def wait_for(self, event: Event, timeout_s: float = 10.0) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: event in self.seen, timeout=timeout_s)


_PAIRS = [(state, trigger) for state in JobState for trigger in Trigger]


class ClaimStoreContract:
    """Pytest mix-in: the whole ``ClaimStore`` contract."""

    def make_store(self, clock: ManualClock) -> ClaimStore:
        raise NotImplementedError("supply make_store() or override the store fixture")

    @pytest.fixture
    def clock(self) -> ManualClock:
        return ManualClock()

    @pytest.fixture
    def store(self, clock: ManualClock) -> ClaimStore:
        return self.make_store(clock)

    # -- generated from the table -----------------------------------------------------------
    @pytest.mark.parametrize(
        ("state", "trigger"), _PAIRS, ids=[f"{s.value}-{t.value}" for s, t in _PAIRS]
    )
    def test_every_state_and_trigger_follows_the_table(
        self, store: ClaimStore, clock: ManualClock, state: JobState, trigger: Trigger
    ) -> None:
        # RESCUE_FAIL needs the last attempt; a retryable job needs one more to be retryable
        max_attempts = 1 if trigger is Trigger.RESCUE_FAIL and state.is_live else 5
        driven = drive_to(store, clock, state, max_attempts=max_attempts)
        assert driven.job.state is state
        fired = fire(store, clock, trigger, driven)
        expected = TRANSITIONS.get((state, trigger))
        if expected is None:
            assert not fired.accepted, f"{trigger} from {state} must be refused"
            assert fired.after == fired.before, "a refused trigger must change nothing"
        else:
            assert fired.accepted, f"{trigger} from {state} must be applied ({fired.detail})"
            assert fired.after.state is expected
            assert fired.after.run_lease >= fired.before.run_lease

    # -- insert -----------------------------------------------------------------------------
    def test_insert_makes_jobs_available_now_and_scheduled_later(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        now_job, later_job = store.insert(
            [
                NewJob(kind="a", args={"n": 1}),
                NewJob(kind="b", run_at=clock.now() + timedelta(seconds=30)),
            ]
        )
        assert now_job.state is JobState.AVAILABLE
        assert later_job.state is JobState.SCHEDULED
        assert later_job.id > now_job.id
        assert (now_job.attempt, now_job.run_lease, now_job.priority) == (0, 0, 2)
        assert now_job.max_attempts == 25
        assert now_job.args == {"n": 1}
        assert store.get_job(now_job.id) == now_job

    def test_insert_keeps_hostile_text_verbatim(self, store: ClaimStore) -> None:
        args = {"q": "'; DROP TABLE jobs; --", "u": "żółć 🚀", "nested": [{"a": None}, 1.5]}
        job = _one(store, args=args, tags=["it's", "--x"], metadata={"k": '"quoted"'})
        got = store.get_job(job.id)
        assert got.args == args
        assert got.tags == ("it's", "--x")
        assert got.metadata == {"k": '"quoted"'}

    def test_insert_rejects_values_that_are_not_new_jobs(self, store: ClaimStore) -> None:
        with pytest.raises(ValidationError):
            store.insert([{"kind": "x"}])  # type: ignore[list-item]
        assert store.list_jobs() == []

    # -- claim ------------------------------------------------------------------------------
    def test_claim_orders_by_priority_then_run_at_then_id(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        low = _one(store, priority=4)
        first = _one(store, priority=1)
        second = _one(store, priority=1)
        normal = _one(store, priority=2)
        claimed = store.claim("default", limit=10)
        assert [j.id for j in claimed] == [first.id, second.id, normal.id, low.id]

    def test_claim_starts_an_attempt_with_a_new_lease(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store, deadline_duration_s=60)
        assert job.state is JobState.RUNNING
        assert (job.attempt, job.run_lease) == (1, 1)
        assert job.attempted_at == job.heartbeat_at == clock.now()
        assert job.deadline_at == clock.now() + timedelta(seconds=60)

    def test_claim_with_zero_deadline_sets_no_deadline(self, store: ClaimStore) -> None:
        _one(store)
        assert _claim_one(store, deadline_duration_s=0).deadline_at is None

    def test_claim_respects_limit_and_never_hands_out_a_job_twice(self, store: ClaimStore) -> None:
        store.insert([NewJob(kind="k") for _ in range(7)])
        first = store.claim("default", limit=3)
        second = store.claim("default", limit=10)
        assert len(first) == 3
        assert len(second) == 4
        assert not {j.id for j in first} & {j.id for j in second}
        assert store.claim("default", limit=10) == []

    def test_concurrent_claims_share_no_job(self, store: ClaimStore) -> None:
        store.insert([NewJob(kind="k") for _ in range(200)])
        seen: list[int] = []
        lock = threading.Lock()

        def worker() -> None:
            while batch := store.claim("default", limit=7):
                with lock:
                    seen.extend(j.id for j in batch)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(seen) == 200
        assert len(set(seen)) == 200

    def test_claim_takes_due_scheduled_and_retryable_jobs_directly(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        scheduled = _one(store, run_at=clock.now() + timedelta(seconds=10))
        _one(store, kind="retry_me")
        running = _claim_one(store)
        assert isinstance(_finish(store, running.lease, RetryAfter(5)), Applied)
        assert store.claim("default", limit=10) == []
        clock.advance(10)
        claimed = store.claim("default", limit=10)
        assert {j.id for j in claimed} == {scheduled.id, running.id}
        assert all(j.state is JobState.RUNNING for j in claimed)

    def test_claim_skips_paused_queue_until_resumed(self, store: ClaimStore) -> None:
        _one(store, queue="email")
        store.pause_queue("email")
        assert store.claim("email", limit=5) == []
        store.resume_queue("email")
        assert len(store.claim("email", limit=5)) == 1

    def test_claim_rejects_bad_arguments(self, store: ClaimStore) -> None:
        with pytest.raises(ValidationError):
            store.claim("Bad Queue!", limit=1)
        with pytest.raises(ValidationError):
            store.claim("default", limit=0)
        with pytest.raises(ValidationError):
            store.claim("default", limit=1, deadline_duration_s=-1)

    # -- heartbeats and the lease -----------------------------------------------------------
    def test_heartbeat_extends_the_claim_and_flushes_progress_and_metadata(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store, metadata={"a": 1})
        job = _claim_one(store)
        clock.advance(30)
        [result] = store.heartbeat(
            [Heartbeat(job.lease, progress={"percent": 50}, metadata={"b": 2})]
        )
        assert isinstance(result, Applied)
        got = store.get_job(job.id)
        assert got.heartbeat_at == clock.now()
        assert got.progress == {"percent": 50}
        assert got.metadata == {"a": 1, "b": 2}

    def test_heartbeat_reports_each_stale_lease_with_its_reason(self, store: ClaimStore) -> None:
        store.insert([NewJob(kind="k"), NewJob(kind="k")])
        ja = _claim_one(store)
        jb = _claim_one(store)
        store.cancel(jb.id)
        results = store.heartbeat(
            [
                Heartbeat(ja.lease),
                Heartbeat(Lease(ja.id, ja.run_lease + 1)),
                Heartbeat(jb.lease),
                Heartbeat(Lease(999_999, 1)),
            ]
        )
        assert isinstance(results[0], Applied)
        assert results[1] == Stale(Lease(ja.id, ja.run_lease + 1), StaleReason.LEASE_SUPERSEDED)
        assert results[2] == Stale(jb.lease, StaleReason.CANCELLED)
        assert results[3] == Stale(Lease(999_999, 1), StaleReason.NOT_FOUND)

    # -- finishing an attempt ---------------------------------------------------------------
    def test_complete_finalizes_and_clears_progress(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store)
        store.heartbeat([Heartbeat(job.lease, progress={"p": 1})])
        result = store.finish([Finish(job.lease, Complete(), metadata={"done": True})])[0]
        assert isinstance(result, Applied)
        got = store.get_job(job.id)
        assert got.state is JobState.COMPLETED
        assert got.finalized_at == clock.now()
        assert got.progress is None
        assert got.metadata == {"done": True}

    def test_error_retries_with_backoff_and_records_the_attempt(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store)
        assert isinstance(
            _finish(store, job.lease, Fail("ValueError: bad", traceback="tb")), Applied
        )
        got = store.get_job(job.id)
        assert got.state is JobState.RETRYABLE
        assert (got.attempt, got.run_lease) == (1, 1)
        delay = (got.run_at - clock.now()).total_seconds()
        assert 2.0 <= delay <= 2.5  # 2**1 s plus up to 25% jitter
        [entry] = got.errors
        assert (entry.error, entry.attempt, entry.at, entry.terminal) == (
            "ValueError: bad",
            1,
            clock.now(),
            False,
        )
        assert entry.traceback == "tb"

    def test_retry_after_uses_the_handler_delay(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store)
        assert isinstance(_finish(store, job.lease, RetryAfter(42)), Applied)
        got = store.get_job(job.id)
        assert got.state is JobState.RETRYABLE
        assert got.run_at == clock.now() + timedelta(seconds=42)
        assert len(got.errors) == 1

    def test_backoff_never_exceeds_a_day(self, store: ClaimStore, clock: ManualClock) -> None:
        _one(store, max_attempts=1000)
        for _ in range(20):
            job = _claim_one(store)
            assert isinstance(_finish(store, job.lease, Fail("again")), Applied)
            got = store.get_job(job.id)
            assert (got.run_at - clock.now()).total_seconds() <= BACKOFF_MAX_S
            clock.set(got.run_at)
        assert store.get_job(job.id).attempt == 20

    def test_last_attempt_error_fails_the_job(self, store: ClaimStore, clock: ManualClock) -> None:
        _one(store, max_attempts=2)
        for _ in range(2):
            job = _claim_one(store)
            _finish(store, job.lease, Fail("RuntimeError: nope"))
            clock.advance(10)
        got = store.get_job(job.id)
        assert got.state is JobState.FAILED
        assert got.finalized_at is not None
        assert [e.attempt for e in got.errors] == [1, 2]

    def test_terminal_error_fails_at_once(self, store: ClaimStore) -> None:
        _one(store, max_attempts=25)
        job = _claim_one(store)
        _finish(store, job.lease, Fail("TerminalError: bad input", terminal=True))
        got = store.get_job(job.id)
        assert got.state is JobState.FAILED
        assert got.attempt == 1
        assert got.errors[-1].terminal is True

    def test_snooze_gives_the_attempt_back(self, store: ClaimStore, clock: ManualClock) -> None:
        _one(store, max_attempts=1)
        for _ in range(5):
            job = _claim_one(store)
            assert job.attempt == 1
            assert isinstance(_finish(store, job.lease, Snooze(30)), Applied)
            got = store.get_job(job.id)
            assert got.state is JobState.SCHEDULED
            assert got.attempt == 0
            assert got.errors == ()
            assert got.run_at == clock.now() + timedelta(seconds=30)
            clock.advance(30)
        assert got.run_lease == 5

    def test_handler_cancel_records_reason_and_never_dead_letters(self, store: ClaimStore) -> None:
        store.set_dlq_enabled("default", True)
        _one(store)
        job = _claim_one(store)
        _finish(store, job.lease, Cancel("customer deleted"))
        got = store.get_job(job.id)
        assert got.state is JobState.CANCELLED
        assert got.errors[-1].error == "customer deleted"
        assert store.list_dlq(queue="default") == []

    def test_finish_batches_report_each_result_in_order(self, store: ClaimStore) -> None:
        store.insert([NewJob(kind="k") for _ in range(3)])
        a, b, c = store.claim("default", limit=3)
        results = store.finish(
            [
                Finish(a.lease, Complete()),
                Finish(Lease(b.id, b.run_lease + 7), Complete()),
                Finish(c.lease, RetryAfter(1)),
            ]
        )
        assert isinstance(results[0], Applied)
        assert isinstance(results[1], Stale)
        assert isinstance(results[2], Applied)
        assert store.get_job(b.id).state is JobState.RUNNING

    # -- crash recovery and late finishes ---------------------------------------------------
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
        clock.set(rescued.job.run_at)
        second = _claim_one(store)
        assert second.id == first.id
        assert (second.attempt, second.run_lease) == (2, 2)

    def test_late_finish_after_rescue_changes_nothing(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        first = _claim_one(store)
        clock.advance(STALENESS_S + 1)
        store.rescue(staleness_s=STALENESS_S)
        clock.advance(3600)
        second = _claim_one(store)
        assert isinstance(_finish(store, second.lease, Complete()), Applied)
        after_second = store.get_job(first.id)
        late = _finish(store, first.lease, Fail("late failure"))
        assert late == Stale(first.lease, StaleReason.LEASE_SUPERSEDED)
        assert store.get_job(first.id) == after_second
        assert after_second.state is JobState.COMPLETED

    def test_late_finish_while_rescued_job_waits_changes_nothing(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        first = _claim_one(store)
        clock.advance(STALENESS_S + 1)
        store.rescue(staleness_s=STALENESS_S)
        before = store.get_job(first.id)
        assert _finish(store, first.lease, Complete()) == Stale(
            first.lease, StaleReason.STATE_CHANGED
        )
        assert store.get_job(first.id) == before

    def test_finish_after_operator_cancel_is_ignored(self, store: ClaimStore) -> None:
        _one(store)
        job = _claim_one(store)
        cancelled = store.cancel(job.id)
        assert cancelled.state is JobState.CANCELLED
        assert _finish(store, job.lease, Complete()) == Stale(job.lease, StaleReason.CANCELLED)
        assert store.get_job(job.id) == cancelled

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

    def test_rescue_is_bounded_per_call(self, store: ClaimStore, clock: ManualClock) -> None:
        store.insert([NewJob(kind="k") for _ in range(5)])
        store.claim("default", limit=5)
        clock.advance(STALENESS_S + 1)
        assert len(store.rescue(staleness_s=STALENESS_S, limit=2)) == 2
        assert len(store.rescue(staleness_s=STALENESS_S, limit=10)) == 3
        assert store.rescue(staleness_s=STALENESS_S) == []

    def test_promote_makes_due_jobs_available(self, store: ClaimStore, clock: ManualClock) -> None:
        job = _one(store, run_at=clock.now() + timedelta(seconds=5))
        assert store.promote() == []
        clock.advance(5)
        [promoted] = store.promote()
        assert promoted.id == job.id
        assert store.get_job(job.id).state is JobState.AVAILABLE

    # -- the poison-job rule: every way an attempt ends spends one -------------------------
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

    # -- callbacks --------------------------------------------------------------------------
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
        # time spent parked does not count against the attempt's deadline
        assert job.deadline_at is not None
        assert resumed.deadline_at == clock.now() + (
            job.deadline_at - (job.attempted_at or clock.now())
        )
        assert isinstance(_finish(store, job.lease, Complete()), Applied)

    def test_callback_resolves_at_most_once(self, store: ClaimStore) -> None:
        _one(store)
        job = _claim_one(store)
        callback_id = _park(store, job)
        done = store.resolve_callback(callback_id, CompleteCallback({"v": 1}))
        assert done.state is JobState.COMPLETED
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
        self, store: ClaimStore
    ) -> None:
        _one(store)
        job = _claim_one(store)
        registered = store.register_callback(job.lease)
        assert isinstance(registered, Applied)
        callback_id = registered.job.callback_id
        assert callback_id is not None
        store.resolve_callback(callback_id, CompleteCallback({"early": True}))
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
        self, store: ClaimStore
    ) -> None:
        _one(store, max_attempts=3)
        job = _claim_one(store)
        callback_id = _park(store, job)
        restarted = store.resolve_callback(callback_id, RetryCallback())
        assert restarted.state is JobState.AVAILABLE
        assert (restarted.attempt, restarted.run_lease) == (0, 1)
        again = _claim_one(store)
        assert (again.attempt, again.run_lease) == (1, 2)

    def test_callback_fail_fails_the_job_terminally(self, store: ClaimStore) -> None:
        store.set_dlq_enabled("cb", True)
        _one(store, queue="cb")
        job = _claim_one(store, "cb")
        callback_id = _park(store, job)
        failed = store.resolve_callback(callback_id, FailCallback("card declined"))
        assert failed.state is JobState.FAILED
        [entry] = store.list_dlq(queue="cb")
        assert entry.reason == DlqReason.TERMINAL_ERROR.value
        assert entry.job.errors[-1].error == "card declined"

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

    def test_unknown_callback_id_is_not_found(self, store: ClaimStore) -> None:
        with pytest.raises(CallbackNotFound):
            store.resolve_callback("no-such-callback", CompleteCallback())

    def test_register_callback_with_stale_lease_is_stale(self, store: ClaimStore) -> None:
        _one(store)
        job = _claim_one(store)
        result = store.register_callback(Lease(job.id, job.run_lease + 1))
        assert isinstance(result, Stale)
        assert store.get_job(job.id).callback_id is None

    # -- operators --------------------------------------------------------------------------
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

    # -- the dead-letter queue --------------------------------------------------------------
    def test_failed_jobs_stay_in_place_when_the_queue_has_no_dlq(self, store: ClaimStore) -> None:
        _one(store)
        job = _claim_one(store)
        _finish(store, job.lease, Fail("x", terminal=True))
        assert store.list_dlq(queue="default") == []
        assert store.list_jobs(state=JobState.FAILED)[0].id == job.id

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
        retried = store.retry_from_dlq(job.id)
        assert retried.state is JobState.AVAILABLE
        assert (retried.attempt, retried.run_lease) == (0, 1)
        assert [e.error for e in retried.errors] == ["boom"]
        assert store.list_dlq(queue="d") == []
        assert _claim_one(store, "d").run_lease == 2

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

    # -- wake-up hints ----------------------------------------------------------------------
    def test_insert_and_retry_announce_available_work(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        events = _Events()
        unsubscribe = store.subscribe(events)
        try:
            _one(store, queue="hinted")
            assert events.wait_for(JobsAvailable("hinted"))
            _one(store, queue="later", run_at=clock.now() + timedelta(seconds=5))
            clock.advance(5)
            store.promote()
            assert events.wait_for(JobsAvailable("later"))
        finally:
            unsubscribe()

    def test_cancel_of_a_running_attempt_tells_its_worker(self, store: ClaimStore) -> None:
        events = _Events()
        unsubscribe = store.subscribe(events)
        try:
            _one(store)
            job = _claim_one(store)
            store.cancel(job.id)
            assert events.wait_for(CancelRequested(job.lease))
        finally:
            unsubscribe()

    def test_callback_answer_tells_the_waiting_worker(self, store: ClaimStore) -> None:
        events = _Events()
        unsubscribe = store.subscribe(events)
        try:
            _one(store)
            job = _claim_one(store)
            callback_id = _park(store, job)
            store.resolve_callback(callback_id, ResumeCallback({"v": 1}))
            assert events.wait_for(CallbackResolved(job.lease))
        finally:
            unsubscribe()

    def test_unsubscribed_listener_hears_nothing_more(self, store: ClaimStore) -> None:
        before, after = _Events(), _Events()
        unsubscribe = store.subscribe(before)
        unsubscribe()
        unsubscribe_after = store.subscribe(after)
        try:
            _one(store, queue="quiet")
            assert after.wait_for(JobsAvailable("quiet"))
            assert before.seen == []
        finally:
            unsubscribe_after()

    # -- retention and leadership -----------------------------------------------------------
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
        assert store.expire_dlq(older_than_s=50) == 1
        assert len(store.list_dlq(queue="d")) == 1

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
