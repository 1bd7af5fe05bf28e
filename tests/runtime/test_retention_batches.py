"""Retention deletes finished jobs in rounds no larger than the maintenance batch, and keeps
going, round after round without waiting out the interval, until nothing due is left."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import awa
from awa.ports import Rescued
from awa.runtime.observe import MaintenanceReport, Observer
from tests.runtime.conftest import Backend, run, until

BATCH = 10


@dataclass
class Chore:
    n: int


class Rounds(Observer):
    def __init__(self) -> None:
        self.deleted: list[int] = []

    def maintained(self, report: MaintenanceReport, rescued: Sequence[Rescued]) -> None:
        if report.leader:
            self.deleted.append(report.deleted)


def test_retention_deletes_in_bounded_batches_until_nothing_due_is_left(
    backend: Backend,
) -> None:
    async def story() -> None:
        clock, store, [client] = backend.clients(1)
        done: list[int] = []

        @client.task(Chore)
        async def chore(job: awa.Job[Chore]) -> None:
            done.append(job.args.n)

        due = await client.insert_many([Chore(n) for n in range(3 * BATCH + 5)])
        rounds = Rounds()
        config = awa.RuntimeConfig(
            maintenance_interval_s=60, finished_retention_s=3600, maintenance_batch_max=BATCH
        )
        await client.start([("default", 5)], runtime_config=config, observers=[rounds])
        try:
            await until(lambda: len(done) == len(due))
            await until(lambda: store.count_jobs(state=awa.JobState.COMPLETED) == len(due))
            clock.advance(1800)
            [kept] = await client.insert_many([Chore(-1)])
            await until(lambda: len(done) == len(due) + 1)
            clock.advance(1801)  # the first jobs are past retention, the last one is not
            await until(lambda: sum(rounds.deleted) == len(due))
            assert max(rounds.deleted) == BATCH
            # four rounds back to back (10, 10, 10, 5), not one per 60 s interval
            assert [n for n in rounds.deleted if n] == [BATCH, BATCH, BATCH, 5]
            assert [job.id for job in store.list_jobs()] == [kept.id]
        finally:
            await client.close()

    run(story)
