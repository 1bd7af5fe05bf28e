"""The contract of ``subscribe``: the wake-up hints a store sends its listeners.

Work available on a queue, a cancel for a running attempt, a callback answered; an
unsubscribed listener hears nothing more. Tests wait on the hint, never on a sleep. Hints are
an optional capability (``awa.ports.Listens``): a store without them is skipped here, and its
workers poll.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import Complete, Fail, NewJob, ResumeCallback, RetryAfter, Schedule
from awa.ports import (
    CallbackResolved,
    CancelRequested,
    ClaimStore,
    Finish,
    JobsAvailable,
    Listens,
)
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _Events, _heard, _one, _park

__all__ = ["HintContract"]


class HintContract(StoreFixtures):
    """Hints reach subscribed listeners, and only them."""

    @pytest.fixture
    def hints(self, store: ClaimStore) -> Listens:
        if not isinstance(store, Listens):
            pytest.skip(f"{type(store).__name__} sends no hints (awa.ports.Listens)")
        return store

    def test_insert_and_retry_announce_available_work(
        self, store: ClaimStore, hints: Listens, clock: ManualClock
    ) -> None:
        with _heard(hints) as events:
            _one(store, queue="hinted")
            assert events.wait_for(JobsAvailable("hinted"))
            _one(store, queue="later", run_at=clock.now() + timedelta(seconds=5))
            clock.advance(5)
            store.promote()
            assert events.wait_for(JobsAvailable("later"))

    def test_a_fire_announces_its_job(
        self, store: ClaimStore, hints: Listens, clock: ManualClock
    ) -> None:
        tick = Schedule(name="tick", cron="* * * * *", job=NewJob(kind="t", queue="fired"))
        store.register_schedules([tick])
        clock.advance(60)
        [plan] = store.plan_fires().plans
        with _heard(hints) as events:
            store.fire(plan)
            assert events.wait_for(JobsAvailable("fired"))

    def test_only_work_that_became_runnable_is_announced(
        self, store: ClaimStore, hints: Listens, clock: ManualClock
    ) -> None:
        with _heard(hints) as events:
            store.insert([NewJob(kind="k", queue="later", run_at=clock.now() + timedelta(hours=1))])
            store.insert([NewJob(kind="k", queue="once") for _ in range(3)])
            done, failed, retried = store.claim("once", limit=3)
            store.finish(
                [
                    Finish(done.lease, Complete()),
                    Finish(failed.lease, Fail("x", terminal=True)),
                    Finish(retried.lease, RetryAfter(60)),
                ]
            )
            _one(store, queue="marker")  # announced after everything above
            assert events.wait_for(JobsAvailable("marker"))
            assert events.seen.count(JobsAvailable("once")) == 1, events.seen
            assert JobsAvailable("later") not in events.seen, "nothing runnable there yet"

    def test_cancel_of_a_running_attempt_tells_its_worker(
        self, store: ClaimStore, hints: Listens
    ) -> None:
        with _heard(hints) as events:
            _one(store)
            job = _claim_one(store)
            store.cancel(job.id)
            assert events.wait_for(CancelRequested(job.lease))

    def test_cancel_of_a_job_nobody_runs_tells_no_worker(
        self, store: ClaimStore, hints: Listens, clock: ManualClock
    ) -> None:
        with _heard(hints) as events:
            waiting = _one(store, queue="idle")
            later = _one(store, queue="idle", run_at=clock.now() + timedelta(seconds=60))
            store.cancel(waiting.id)
            store.cancel(later.id)
            _one(store, queue="busy")
            running = _claim_one(store, "busy")
            store.cancel(running.id)  # a hint that comes after the ones that must not
            assert events.wait_for(CancelRequested(running.lease))
            cancels = [e for e in events.seen if isinstance(e, CancelRequested)]
            assert cancels == [CancelRequested(running.lease)]

    def test_callback_answer_tells_the_waiting_worker(
        self, store: ClaimStore, hints: Listens
    ) -> None:
        with _heard(hints) as events:
            _one(store)
            job = _claim_one(store)
            callback_id = _park(store, job)
            store.resolve_callback(callback_id, ResumeCallback({"v": 1}))
            assert events.wait_for(CallbackResolved(job.lease))

    def test_unsubscribed_listener_hears_nothing_more(
        self, store: ClaimStore, hints: Listens
    ) -> None:
        before, after = _Events(), _Events()
        unsubscribe = hints.subscribe(before)
        unsubscribe()
        unsubscribe_after = hints.subscribe(after)
        try:
            _one(store, queue="quiet")
            assert after.wait_for(JobsAvailable("quiet"))
            assert before.seen == []
        finally:
            unsubscribe_after()
