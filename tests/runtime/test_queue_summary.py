"""The maintenance leader keeps the store's queue summary fresh, once per summary interval,
and hands the counts to observers that want them (the metrics)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import pytest

import awa
from awa import ManualClock, MemoryStore
from awa.ports import ENDED_WINDOW_S, QueueStats, QueueSummary, SummarizesQueues
from awa.runtime.observe import Observer, Observers
from awa.runtime.runtime import Runtime
from awa.runtime.services import SUMMARY_SHARE_MAX, MaintenanceService
from awa.runtime.stats import RuntimeStats
from awa.runtime.store_calls import StoreCalls
from tests.runtime.conftest import Backend, advance_until, run, until


@dataclass
class Chore:
    n: int


class Counts(Observer):
    wants_queue_stats = True

    def __init__(self) -> None:
        self.heard: list[tuple[datetime, int]] = []

    def queues_measured(self, stats: Sequence[QueueStats], now: datetime) -> None:
        available = sum(s.counts[awa.JobState.AVAILABLE] for s in stats if s.queue == "chores")
        self.heard.append((now, available))


def test_the_leader_recounts_the_queues_each_summary_interval(backend: Backend) -> None:
    async def story() -> None:
        clock, store, [client] = backend.clients(1)
        assert isinstance(store, SummarizesQueues)
        counts = Counts()

        @client.task(Chore, queue="other")
        async def chore(job: awa.Job[Chore]) -> None: ...

        await client.insert(Chore(1), queue="chores")
        config = awa.RuntimeConfig(maintenance_interval_s=2, queue_summary_interval_s=10)
        await client.start([("other", 1)], runtime_config=config, observers=[counts])
        try:
            await until(lambda: len(counts.heard) == 1)
            first = store.queue_summary()
            assert first is not None
            assert first.counted_at == clock.now()
            [(heard_at, available)] = counts.heard
            assert (heard_at, available) == (clock.now(), 1)

            await client.insert(Chore(2), queue="chores")
            clock.advance(4)  # two maintenance rounds, no recount yet
            await until(
                lambda: (
                    client.runtime is not None and not client.runtime.ready_services(clock.now())
                )
            )
            summary = store.queue_summary()
            assert summary is not None
            assert summary.counted_at == first.counted_at
            await advance_until(clock, lambda: len(counts.heard) == 2, step_s=2, steps_max=10)
            summary = store.queue_summary()
            assert summary is not None
            stats = summary.queue("chores")
            assert stats is not None
            assert stats.counts[awa.JobState.AVAILABLE] == 2
            assert counts.heard[1][1] == 2
            assert (counts.heard[1][0] - first.counted_at).total_seconds() >= 10
        finally:
            await client.close()

    run(story)


def test_a_summary_interval_of_zero_counts_nothing(backend: Backend) -> None:
    async def story() -> None:
        clock, store, [client] = backend.clients(1)
        assert isinstance(store, SummarizesQueues)

        @client.task(Chore)
        async def chore(job: awa.Job[Chore]) -> None: ...

        config = awa.RuntimeConfig(queue_summary_interval_s=0)
        await client.start([("default", 1)], runtime_config=config)
        try:
            runtime = client.runtime
            assert isinstance(runtime, Runtime)
            maintenance = runtime.service("maintenance")
            assert isinstance(maintenance, MaintenanceService)
            await until(lambda: maintenance.last_report.leader)
            clock.advance(30)
            await until(lambda: not runtime.ready_services(clock.now()))
            assert store.queue_summary() is None
        finally:
            await client.close()

    run(story)


class SlowCount(MemoryStore):
    """A store whose count takes as long as a scan of a table of millions of finished jobs."""

    count_s = 0.2

    def summarize_queues(self, *, window_s: float = ENDED_WINDOW_S) -> QueueSummary:
        time.sleep(self.count_s)  # the count's own (real) cost, which the spacing measures
        return super().summarize_queues(window_s=window_s)


def test_a_slow_count_is_spaced_to_take_at_most_a_twentieth_of_the_leaders_time() -> None:
    async def story() -> None:
        clock = ManualClock()
        store = SlowCount(clock)
        config = awa.RuntimeConfig(maintenance_interval_s=1, queue_summary_interval_s=1)
        maintenance = MaintenanceService(
            store,
            StoreCalls(inline=True, timeout_s=30),
            config,
            RuntimeStats(),
            Observers([]),
            owner="leader",
            staleness_s=30,
        )
        start = clock.now()
        await maintenance.run_once(start)
        first = store.queue_summary()
        assert first is not None
        assert first.counted_at == start
        assert maintenance.last_count_s >= SlowCount.count_s
        spacing_s = maintenance.summary_spacing_s()
        assert spacing_s >= SlowCount.count_s / SUMMARY_SHARE_MAX > 3

        clock.advance(3)  # three intervals of 1 s, but the count took 0.2 s: not yet
        await maintenance.run_once(clock.now())
        summary = store.queue_summary()
        assert summary is not None
        assert summary.counted_at == start

        clock.advance(spacing_s - 3)
        await maintenance.run_once(clock.now())
        summary = store.queue_summary()
        assert summary is not None
        assert summary.counted_at == clock.now()

    run(story)


def test_a_quick_count_keeps_the_configured_interval() -> None:
    maintenance = MaintenanceService(
        MemoryStore(ManualClock()),
        StoreCalls(inline=True, timeout_s=30),
        awa.RuntimeConfig(queue_summary_interval_s=10),
        RuntimeStats(),
        Observers([]),
        owner="leader",
        staleness_s=30,
    )
    maintenance.last_count_s = 0.3  # a count of about a million rows
    assert maintenance.summary_spacing_s() == 10
    maintenance.last_count_s = 2.0  # several million
    assert maintenance.summary_spacing_s() == pytest.approx(2.0 / SUMMARY_SHARE_MAX)
