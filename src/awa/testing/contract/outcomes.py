"""The contract of ``finish``: what each handler outcome does to the job.

Complete, error with backoff, retry after a delay, the last attempt, a terminal error, a
snooze that gives the attempt back, and a handler's cancel.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import (
    Cancel,
    Complete,
    Fail,
    JobState,
    Outcome,
    ResumeCallback,
    RetryAfter,
    Snooze,
    ValidationError,
    WaitForCallback,
)
from awa.domain.backoff import BACKOFF_MAX_S
from awa.domain.values import CallbackToken
from awa.ports import Applied, ClaimStore, Finish, Heartbeat
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _one, _park

__all__ = ["OutcomeContract"]


class OutcomeContract(StoreFixtures):
    """Each handler outcome moves the job as the decisions say."""

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

    def test_a_finish_carrying_its_claimed_job_returns_the_job_as_written(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        """A store may take what a lease cannot change from the claimed job: what it returns
        must still be the job as stored, including what changed since the claim."""
        for n in range(4):
            _one(store, args={"n": n, "big": 1e20}, tags=("t", str(n)), metadata={"m": n})
        plain, beat, resumed, retried = store.claim("default", limit=4)
        store.heartbeat([Heartbeat(beat.lease, progress={"p": 5}, metadata={"seen": True})])
        store.resolve_callback(_park(store, resumed), ResumeCallback({"answer": 42}))
        assert isinstance(_finish(store, retried.lease, Fail("boom")), Applied)
        clock.advance(7200)
        [retried] = store.claim("default", limit=1)
        clock.advance(3)
        results = store.finish(
            [
                Finish(job.lease, Complete(), metadata={"done": job.id}, claimed=job)
                for job in (plain, beat, resumed, retried)
            ]
        )
        for result in results:
            assert isinstance(result, Applied)
            assert result.job == store.get_job(result.job.id)
            assert result.job.state is JobState.COMPLETED
        assert [r.job.metadata for r in results if isinstance(r, Applied)][1] == {
            "m": 1,
            "seen": True,
            "done": beat.id,
        }
        stale = store.finish([Finish(plain.lease, Complete(), claimed=plain)])[0]
        assert not isinstance(stale, Applied)

    def test_a_finish_whose_claimed_job_holds_another_lease_is_refused(
        self, store: ClaimStore
    ) -> None:
        first, second = _one(store), _one(store)
        claimed = store.claim("default", limit=2)
        with pytest.raises(ValidationError, match="claimed job"):
            store.finish([Finish(claimed[0].lease, Complete(), claimed=claimed[1])])
        assert {store.get_job(j.id).state for j in (first, second)} == {JobState.RUNNING}

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
            assert (got.deadline_at, got.finalized_at) == (None, None)
            clock.advance(30)
        assert got.run_lease == 5

    def test_handler_cancel_records_reason_and_never_dead_letters(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("default", True)
        _one(store)
        job = _claim_one(store)
        clock.advance(2)
        _finish(store, job.lease, Cancel("customer deleted"))
        got = store.get_job(job.id)
        assert got.state is JobState.CANCELLED
        assert got.errors[-1].error == "customer deleted"
        assert (got.finalized_at, got.deadline_at) == (clock.now(), None)
        assert store.list_dlq(queue="default") == []

    @pytest.mark.parametrize(
        "kind", ["snooze", "cancel", "wait", "fail", "retry_after", "terminal", "complete"]
    )
    def test_progress_and_metadata_sent_with_an_outcome_are_kept(
        self, store: ClaimStore, kind: str
    ) -> None:
        _one(store, metadata={"kept": 1}, max_attempts=3)
        job = _claim_one(store)
        registered = store.register_callback(job.lease)
        assert isinstance(registered, Applied)
        token = CallbackToken(registered.job.callback_id or "", job.lease, job.run_at)
        outcomes: dict[str, Outcome] = {
            "snooze": Snooze(10),
            "cancel": Cancel("stop"),
            "wait": WaitForCallback(token),
            "fail": Fail("ValueError: x"),
            "retry_after": RetryAfter(10),
            "terminal": Fail("TerminalError: x", terminal=True),
            "complete": Complete(),
        }
        finish = Finish(job.lease, outcomes[kind], progress={"percent": 60}, metadata={"new": 2})
        [result] = store.finish([finish])
        assert isinstance(result, Applied)
        got = store.get_job(job.id)
        assert got == result.job
        assert got.metadata == {"kept": 1, "new": 2}
        # a completed job has no progress left to show; every other outcome keeps the last
        assert got.progress == (None if kind == "complete" else {"percent": 60})
