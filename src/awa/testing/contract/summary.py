"""The contract of the queue summary (``awa.ports.SummarizesQueues``): counted when asked, kept
until the next count, and read back with the queue settings of now.

An optional capability: a store without it is skipped here, and readers of queue counts call
``queue_stats()`` instead.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import Complete, Fail, JobState, NewJob
from awa.domain.flow import RateLimit
from awa.ports import ClaimStore, DlqGroup, SummarizesQueues
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _one

__all__ = ["SummaryContract"]


class SummaryContract(StoreFixtures):
    """A summary says what the store held when it was counted, and when that was."""

    @pytest.fixture
    def summarizing(self, store: ClaimStore) -> SummarizesQueues:
        if not isinstance(store, SummarizesQueues):
            pytest.skip(f"{type(store).__name__} keeps no queue summary")
        return store

    def test_no_summary_until_the_queues_are_counted(
        self, store: ClaimStore, summarizing: SummarizesQueues
    ) -> None:
        _one(store)
        assert summarizing.queue_summary() is None

    def test_summary_counts_states_oldest_available_and_dead_letters(
        self, store: ClaimStore, summarizing: SummarizesQueues, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("mail", True)
        first = _one(store, queue="mail", kind="send")
        clock.advance(1)
        store.insert([NewJob(kind="send", queue="mail")])
        clock.advance(1)  # the oldest available job is the first of these three, not the last
        store.insert([NewJob(kind="send", queue="mail") for _ in range(2)])
        store.insert([NewJob(kind="later", queue="mail", run_at=clock.now() + timedelta(hours=1))])
        dead = _claim_one(store, "mail")
        assert dead.id == first.id
        _finish(store, dead.lease, Fail("boom", terminal=True))
        _one(store, queue="other")

        summary = summarizing.summarize_queues()

        assert summary.counted_at == clock.now()
        assert [q.queue for q in summary.queues] == ["mail", "other"]
        mail = summary.queue("mail")
        assert mail is not None
        assert mail.counts[JobState.AVAILABLE] == 3
        assert mail.counts[JobState.SCHEDULED] == 1
        assert mail.counts[JobState.FAILED] == 0  # dead-lettered: counted in dlq_depth
        assert set(mail.counts) == set(JobState)
        assert mail.dlq_depth == 1
        assert mail.dlq_enabled
        assert not mail.paused
        assert mail.oldest_available_at == first.created_at + timedelta(seconds=1)
        other = summary.queue("other")
        assert other is not None
        assert other.oldest_available_at == clock.now()  # a queue with available jobs only
        assert summary.dlq == (DlqGroup("mail", "send", "terminal_error", 1, clock.now(), ended=1),)
        assert summarizing.queue_summary() == summary

    def test_summary_counts_jobs_that_ended_within_the_window(
        self, store: ClaimStore, summarizing: SummarizesQueues, clock: ManualClock
    ) -> None:
        store.insert([NewJob(kind="k", queue="w") for _ in range(4)])
        _finish(store, _claim_one(store, "w").lease, Complete())  # ends outside the window
        clock.advance(120)
        _finish(store, _claim_one(store, "w").lease, Complete())
        _finish(store, _claim_one(store, "w").lease, Fail("no", terminal=True))
        store.cancel(_claim_one(store, "w").id)
        clock.advance(1)

        summary = summarizing.summarize_queues(window_s=60)

        assert summary.window_s == 60
        assert summary.ended["w"] == {
            JobState.COMPLETED: 1,
            JobState.FAILED: 1,
            JobState.CANCELLED: 1,
        }
        stats = summary.queue("w")
        assert stats is not None
        assert stats.counts[JobState.COMPLETED] == 2

    def test_the_window_leaves_out_its_first_instant_and_takes_in_now(
        self, store: ClaimStore, summarizing: SummarizesQueues, clock: ManualClock
    ) -> None:
        store.set_dlq_enabled("d", True)
        store.insert([NewJob(kind="k", queue=q) for q in ("w", "w", "d", "d")])
        for wait_s in (60, 0):  # one of each exactly 60 s before the summary, one at its moment
            _finish(store, _claim_one(store, "w").lease, Complete())
            _finish(store, _claim_one(store, "d").lease, Fail("no", terminal=True))
            clock.advance(wait_s)
        summary = summarizing.summarize_queues(window_s=60)
        assert summary.ended["w"][JobState.COMPLETED] == 1
        [group] = summary.dlq
        assert (group.count, group.ended) == (2, 1)
        assert group.latest_at == clock.now()  # the later of the two dead letters
        store.insert([NewJob(kind="k", queue="d")])
        _finish(store, _claim_one(store, "d").lease, Fail("no", terminal=True))
        again = summarizing.summarize_queues(window_s=30)
        kept = summarizing.queue_summary()  # the new count replaced the old one
        assert kept is not None
        assert (kept.window_s, kept.dlq) == (30, again.dlq)
        assert kept.dlq[0].count == 3

    def test_summary_stays_as_counted_but_settings_are_read_now(
        self, store: ClaimStore, summarizing: SummarizesQueues, clock: ManualClock
    ) -> None:
        _one(store, queue="q")
        counted = summarizing.summarize_queues()
        clock.advance(30)
        _one(store, queue="q")
        store.pause_queue("q")
        store.set_dlq_enabled("fresh", True)

        read = summarizing.queue_summary()

        assert read is not None
        assert read.counted_at == counted.counted_at
        q = read.queue("q")
        assert q is not None
        assert q.counts[JobState.AVAILABLE] == 1  # the count of then
        assert q.paused  # the setting of now
        fresh = read.queue("fresh")
        assert fresh is not None
        assert fresh.dlq_enabled
        assert sum(fresh.counts.values()) == 0
        recounted = summarizing.summarize_queues()
        assert recounted.counted_at == clock.now()
        q = recounted.queue("q")
        assert q is not None
        assert q.counts[JobState.AVAILABLE] == 2

    def test_the_summary_carries_each_queues_flow_limits_as_they_are_now(
        self, store: ClaimStore, summarizing: SummarizesQueues
    ) -> None:
        _one(store, queue="q")
        summarizing.summarize_queues()
        store.configure_queue(
            "q",
            concurrency_limit=3,
            rate_limit=(2.5, 5),
            key_concurrency_limit=1,
            key_rate_limit=(0.5, 2),
        )
        read = summarizing.queue_summary()
        assert read is not None
        q = read.queue("q")
        assert q is not None
        assert (q.concurrency_limit, q.rate_limit) == (3, RateLimit(2.5, 5))
        assert (q.key_concurrency_limit, q.key_rate_limit) == (1, RateLimit(0.5, 2))

    def test_an_emptied_store_summarizes_to_no_queues(
        self, store: ClaimStore, summarizing: SummarizesQueues
    ) -> None:
        summarizing.summarize_queues()
        summary = summarizing.queue_summary()
        assert summary is not None
        assert summary.queues == ()
        assert summary.dlq == ()
