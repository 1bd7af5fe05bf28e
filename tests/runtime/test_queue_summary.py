"""The maintenance leader keeps the store's queue summary fresh, once per summary interval,
and hands the counts to observers that want them (the metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import awa
from awa.ports import QueueStats, SummarizesQueues
from awa.runtime.observe import Observer
from awa.runtime.runtime import Runtime
from awa.runtime.services import MaintenanceService
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
