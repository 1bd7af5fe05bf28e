"""The contract of worker presence (``awa.ports.TracksWorkers``): which kinds live workers
handle on each queue, and the kinds that wait where none does. An optional capability: a store
without it is skipped here."""

from __future__ import annotations

from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import NewJob, RetryAfter
from awa.ports import ClaimStore, TracksWorkers, UnhandledKind
from awa.ports.checks import WORKER_KINDS_MAX, WORKER_QUEUES_MAX
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish

__all__ = ["PresenceContract"]


class PresenceContract(StoreFixtures):
    """Runnable jobs whose kind no live worker on their queue handles are reported."""

    @pytest.fixture
    def presence(self, store: ClaimStore) -> TracksWorkers:
        if not isinstance(store, TracksWorkers):
            pytest.skip(f"{type(store).__name__} does not track workers (awa.ports.TracksWorkers)")
        return store

    def test_runnable_kinds_no_worker_handles_are_reported_by_queue_and_kind(
        self, store: ClaimStore, presence: TracksWorkers, clock: ManualClock
    ) -> None:
        first = clock.now()
        store.insert([NewJob(kind="charge"), NewJob(kind="email", queue="mail")])
        clock.advance(10)
        store.insert([NewJob(kind="charge"), NewJob(kind="charge", queue="payments")])
        assert presence.unhandled_kinds() == [
            UnhandledKind("default", "charge", 2, first),
            UnhandledKind("mail", "email", 1, first),
            UnhandledKind("payments", "charge", 1, clock.now()),
        ]
        presence.record_worker("w1", {"payments": ["charge"], "mail": ["email"]}, ttl_s=30)
        # charge is handled on payments only: the two on default still wait for nobody
        assert presence.unhandled_kinds() == [UnhandledKind("default", "charge", 2, first)]

    def test_a_worker_may_record_as_many_queues_and_kinds_as_the_bounds_allow(
        self, store: ClaimStore, presence: TracksWorkers
    ) -> None:
        # 1,000 queues, the last with 10,000 kinds: one more of either is refused (refusals)
        kinds = {f"q{n}": ["k"] for n in range(WORKER_QUEUES_MAX - 1)}
        kinds["last"] = [f"k{n}" for n in range(WORKER_KINDS_MAX)]
        store.insert([NewJob(kind=f"k{WORKER_KINDS_MAX - 1}", queue="last")])
        presence.record_worker("w1", kinds, ttl_s=30)
        assert presence.unhandled_kinds() == []

    def test_only_jobs_runnable_now_count(
        self, store: ClaimStore, presence: TracksWorkers, clock: ManualClock
    ) -> None:
        store.insert([NewJob(kind="later", run_at=clock.now() + timedelta(seconds=60))])
        store.insert([NewJob(kind="running")])
        _claim_one(store)
        assert presence.unhandled_kinds() == []
        clock.advance(60)
        assert [u.kind for u in presence.unhandled_kinds()] == ["later"]

    def test_a_record_lapses_without_renewal_and_goes_when_forgotten(
        self, store: ClaimStore, presence: TracksWorkers, clock: ManualClock
    ) -> None:
        store.insert([NewJob(kind="report")])
        presence.record_worker("w1", {"default": ["report"]}, ttl_s=15)
        assert presence.unhandled_kinds() == []
        clock.advance(10)
        presence.record_worker("w1", {"default": ["report"]}, ttl_s=15)  # renewed
        clock.advance(10)
        assert presence.unhandled_kinds() == []
        clock.advance(5)  # 15 s since the renewal: the worker is presumed gone
        assert [u.kind for u in presence.unhandled_kinds()] == ["report"]
        presence.record_worker("w2", {"default": ["report"]}, ttl_s=15)
        assert presence.unhandled_kinds() == []
        presence.forget_worker("w2")
        assert [u.kind for u in presence.unhandled_kinds()] == ["report"]

    def test_one_workers_record_leaves_another_live_worker_in_place(
        self, store: ClaimStore, presence: TracksWorkers
    ) -> None:
        store.insert([NewJob(kind="a"), NewJob(kind="b")])
        presence.record_worker("w1", {"default": ["a"]}, ttl_s=30)
        presence.record_worker("w2", {"default": ["b"]}, ttl_s=30)
        assert presence.unhandled_kinds() == []

    def test_a_due_retry_waits_for_a_handler_too(
        self, store: ClaimStore, presence: TracksWorkers, clock: ManualClock
    ) -> None:
        store.insert([NewJob(kind="flaky")])
        _finish(store, _claim_one(store).lease, RetryAfter(5))
        assert presence.unhandled_kinds() == []  # not due yet
        clock.advance(5)
        assert [u.kind for u in presence.unhandled_kinds()] == ["flaky"]

    def test_a_new_record_replaces_the_workers_old_one(
        self, store: ClaimStore, presence: TracksWorkers
    ) -> None:
        store.insert([NewJob(kind="a"), NewJob(kind="b")])
        presence.record_worker("w1", {"default": ["a", "b"]}, ttl_s=30)
        presence.record_worker("w1", {"default": ["a"]}, ttl_s=30)
        assert [u.kind for u in presence.unhandled_kinds()] == ["b"]
