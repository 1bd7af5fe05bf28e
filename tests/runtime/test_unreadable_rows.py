"""A worker meets a row it cannot read: that job fails, every other job runs, on every backend.

Before: on SQLite every later claim of the queue failed (0 of 20 innocent jobs ran); on
PostgreSQL the claim that took the row committed its batch as ``running`` and could not
decode it, leaving its innocent neighbours running with no worker.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import awa
from awa.domain.defaults import UNREADABLE_JOB
from tests.planting import plant_in

from .conftest import Backend, reaches, run

S = awa.JobState


@dataclass
class Work:
    n: int


def test_a_row_the_worker_cannot_read_fails_alone_and_every_other_job_runs(
    backend: Backend,
) -> None:
    async def story() -> None:
        _, store, [client] = backend.clients()
        ran: list[int] = []
        all_ran = asyncio.Event()

        @client.task(Work)
        async def work(job: awa.Job[Work]) -> None:
            ran.append(job.args.n)
            if len(ran) == 20:
                all_ran.set()

        jobs = await client.insert_many([Work(n) for n in range(21)])
        bad = jobs[10]
        plant_in(store, bad.id, "run_at")
        await client.start([("default", 4)])
        await asyncio.wait_for(all_ran.wait(), 10)
        failed = await reaches(client, bad.id, S.FAILED)
        assert failed.errors[-1].terminal
        assert failed.errors[-1].error.startswith(f"{UNREADABLE_JOB}: run_at holds ")
        assert sorted(ran) == [n for n in range(21) if n != 10]
        for job in jobs:
            if job.id != bad.id:  # a handler that returned has its outcome written soon after
                await reaches(client, job.id, S.COMPLETED)
        await client.shutdown()

    run(story)
