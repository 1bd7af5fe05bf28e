"""Concurrent claimers never share a job."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from awa.adapters.postgres import PostgresStore
from awa.domain import JobState, NewJob
from awa.ports import BATCH_SIZE_MAX

JOBS = 10_000
CLAIMERS = 8


def test_eight_connections_claiming_ten_thousand_jobs_claim_each_exactly_once(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()  # the database clock: the claimers really race
    for start in range(0, JOBS, BATCH_SIZE_MAX):
        batch = min(BATCH_SIZE_MAX, JOBS - start)
        store.insert([NewJob(kind="race", args={"n": start + i}) for i in range(batch)])
    claimed: list[list[Any]] = [[] for _ in range(CLAIMERS)]
    barrier = threading.Barrier(CLAIMERS)
    errors: list[BaseException] = []

    def claimer(mine: list[Any]) -> None:
        try:
            barrier.wait()
            while batch := store.claim("default", limit=37):
                mine.extend((job.id, job.run_lease, job.attempt) for job in batch)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=claimer, args=(mine,)) for mine in claimed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    everything = [claim for mine in claimed for claim in mine]
    assert len(everything) == JOBS
    assert len({job_id for job_id, _, _ in everything}) == JOBS, "a job was claimed twice"
    assert {(lease, attempt) for _, lease, attempt in everything} == {(1, 1)}
    assert sum(1 for mine in claimed if mine) > 1, "the claimers did not actually overlap"
    running = store.queue_stats()[0].counts[JobState.RUNNING]
    assert running == JOBS
