"""The contract of a queue's stored settings: ``configure_queue`` and the retention it sets.

A setting given is stored and every other one left as it was; ``queue_stats`` shows them all;
``delete_finished`` and ``expire_dlq`` hold each queue to its own retention, and queues
without one to the period the caller passes.
"""

from __future__ import annotations

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import Complete, Fail, JobNotFound, NewJob
from awa.ports import ClaimStore, QueueSettings
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish

__all__ = ["QueueSettingsContract"]

DAY_S = 86_400.0


def _stats(store: ClaimStore, queue: str) -> tuple[object, ...]:
    [stats] = [s for s in store.queue_stats() if s.queue == queue]
    return (stats.paused, stats.dlq_enabled, stats.finished_retention_s, stats.dlq_retention_s)


def _finished(store: ClaimStore, queue: str, outcome: object = None) -> int:
    [job] = store.insert([NewJob(kind="k", queue=queue)])
    _finish(store, _claim_one(store, queue).lease, outcome or Complete())
    return job.id


class QueueSettingsContract(StoreFixtures):
    """``configure_queue``: settings that stay as set, and retention per queue."""

    def test_configure_queue_stores_what_is_given_and_returns_every_setting(
        self, store: ClaimStore
    ) -> None:
        assert store.configure_queue("mail", dlq_enabled=True) == QueueSettings("mail", False, True)
        assert _stats(store, "mail") == (False, True, None, None)
        assert store.configure_queue("mail", finished_retention_s=3600) == QueueSettings(
            "mail", False, True, 3600.0, None
        )
        assert store.configure_queue("mail", dlq_retention_s=7 * DAY_S, dlq_enabled=False) == (
            QueueSettings("mail", False, False, 3600.0, 7 * DAY_S)
        )
        assert _stats(store, "mail") == (False, False, 3600.0, 7 * DAY_S)

    def test_a_setting_left_out_is_left_as_it_was(self, store: ClaimStore) -> None:
        store.configure_queue("mail", dlq_enabled=True, finished_retention_s=60)
        store.pause_queue("mail")
        settings = store.configure_queue("mail", dlq_retention_s=120)
        assert settings == QueueSettings("mail", True, True, 60.0, 120.0)
        store.resume_queue("mail")
        store.set_dlq_enabled("mail", False)
        assert _stats(store, "mail") == (False, False, 60.0, 120.0)

    def test_a_queue_first_configured_with_a_retention_only_keeps_its_dlq_off(
        self, store: ClaimStore
    ) -> None:
        settings = store.configure_queue("fresh", finished_retention_s=60)
        assert settings == QueueSettings("fresh", False, False, 60.0, None)
        assert _stats(store, "fresh") == (False, False, 60.0, None)

    def test_a_queue_never_configured_has_the_defaults(self, store: ClaimStore) -> None:
        store.insert([NewJob(kind="k", queue="plain")])
        assert _stats(store, "plain") == (False, False, None, None)

    def test_dlq_routing_set_by_configure_queue_decides_where_failures_go(
        self, store: ClaimStore
    ) -> None:
        store.configure_queue("d", dlq_enabled=True)
        dead = _finished(store, "d", Fail("x", terminal=True))
        assert [e.job.id for e in store.list_dlq(queue="d")] == [dead]
        store.configure_queue("d", dlq_enabled=False)
        kept = _finished(store, "d", Fail("x", terminal=True))
        assert [j.id for j in store.list_jobs(queue="d")] == [kept]

    def test_delete_finished_holds_each_queue_to_its_own_retention(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("brief", finished_retention_s=10)
        store.configure_queue("long", finished_retention_s=1000)
        brief, long, plain = (_finished(store, q) for q in ("brief", "long", "plain"))
        clock.advance(50)
        assert store.delete_finished(older_than_s=100) == 1  # brief only: 50 s > 10 s
        with pytest.raises(JobNotFound):
            store.get_job(brief)
        clock.advance(100)
        assert store.delete_finished(older_than_s=100) == 1  # plain: 150 s > the default
        with pytest.raises(JobNotFound):
            store.get_job(plain)
        assert store.get_job(long).id == long  # 150 s < its own 1000 s
        clock.advance(900)
        assert store.delete_finished(older_than_s=100) == 1

    def test_delete_finished_by_queue_retention_stays_bounded_and_in_age_order(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("brief", finished_retention_s=1)
        first = _finished(store, "brief")
        clock.advance(5)
        second = _finished(store, "brief")
        clock.advance(5)
        assert store.delete_finished(older_than_s=3600, limit=1) == 1
        with pytest.raises(JobNotFound):
            store.get_job(first)
        assert store.get_job(second).id == second
        assert store.delete_finished(older_than_s=3600, limit=1) == 1

    def test_a_queue_keeps_what_is_exactly_as_old_as_its_own_retention(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        # "brief" makes the store's latest cutoff later than "long"'s own: "long" is still
        # held to exactly its retention, not to the latest cutoff nor one instant short of it
        store.configure_queue("brief", finished_retention_s=10, dlq_retention_s=10)
        store.configure_queue(
            "long", dlq_enabled=True, finished_retention_s=100, dlq_retention_s=100
        )
        done = _finished(store, "long")
        _finished(store, "long", Fail("x", terminal=True))
        clock.advance(100)
        assert store.delete_finished(older_than_s=1000) == 0
        assert store.expire_dlq(older_than_s=1000) == 0
        clock.advance(0.000001)
        assert store.delete_finished(older_than_s=1000) == 1
        assert store.expire_dlq(older_than_s=1000) == 1
        with pytest.raises(JobNotFound):
            store.get_job(done)

    def test_a_failed_retention_is_stored_apart_and_queue_stats_shows_it(
        self, store: ClaimStore
    ) -> None:
        settings = store.configure_queue("mail", failed_retention_s=30 * DAY_S)
        assert settings == QueueSettings("mail", failed_retention_s=30 * DAY_S)
        store.configure_queue("mail", finished_retention_s=60, dlq_enabled=True)
        [stats] = [s for s in store.queue_stats() if s.queue == "mail"]
        assert (stats.finished_retention_s, stats.failed_retention_s) == (60.0, 30 * DAY_S)
        assert stats.dlq_retention_s is None

    def test_a_queue_holds_its_failed_and_cancelled_jobs_to_its_failed_retention(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("brief", failed_retention_s=10, finished_retention_s=1000)
        done = _finished(store, "brief")
        failed = _finished(store, "brief", Fail("x", terminal=True))
        [cancelled] = store.insert([NewJob(kind="k", queue="brief")])
        store.cancel(cancelled.id)
        plain = _finished(store, "plain", Fail("x", terminal=True))
        clock.advance(10)
        assert store.delete_finished(older_than_s=100, failed_older_than_s=100) == 0
        clock.advance(0.000001)
        assert store.delete_finished(older_than_s=100, failed_older_than_s=100) == 2
        for gone in (failed, cancelled.id):
            with pytest.raises(JobNotFound):
                store.get_job(gone)
        assert {store.get_job(kept).id for kept in (done, plain)} == {done, plain}

    def test_a_queues_finished_retention_leaves_its_failed_jobs_to_the_failed_default(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        # finished_retention_s keeps completed jobs only; failed ones wait for their own
        store.configure_queue("brief", finished_retention_s=10)
        done = _finished(store, "brief")
        failed = _finished(store, "brief", Fail("x", terminal=True))
        clock.advance(50)
        assert store.delete_finished(older_than_s=100, failed_older_than_s=1000) == 1
        with pytest.raises(JobNotFound):
            store.get_job(done)
        assert store.get_job(failed).id == failed
        clock.advance(1000)
        assert store.delete_finished(older_than_s=100, failed_older_than_s=1000) == 1

    def test_expire_dlq_holds_each_queue_to_its_own_retention(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("brief", dlq_enabled=True, dlq_retention_s=10)
        store.configure_queue("plain", dlq_enabled=True)
        store.configure_queue("long", dlq_enabled=True, dlq_retention_s=1000)
        for queue in ("brief", "plain", "long"):
            _finished(store, queue, Fail("x", terminal=True))
        clock.advance(50)
        assert store.expire_dlq(older_than_s=100) == 1
        assert store.list_dlq(queue="brief") == []
        clock.advance(100)
        assert store.expire_dlq(older_than_s=100) == 1
        assert store.list_dlq(queue="plain") == []
        assert len(store.list_dlq(queue="long")) == 1
        clock.advance(900)
        assert store.expire_dlq(older_than_s=100) == 1

    def test_a_retention_is_kept_to_the_microsecond_as_every_store_keeps_it(
        self, store: ClaimStore
    ) -> None:
        # 1.0078125 is exact in binary and 7 digits long: a store keeping the float as given
        # would answer 1.0078125 where PostgreSQL's interval answers 1.007812
        settings = store.configure_queue("mail", finished_retention_s=1.0078125)
        assert settings.finished_retention_s == 1.007812
        [stats] = [s for s in store.queue_stats() if s.queue == "mail"]
        assert stats.finished_retention_s == 1.007812
