"""A queue's concurrency limit holds across real worker processes: four ``awa.Client``
processes of two slots each work one queue whose ``concurrency_limit`` is 3, and no instant
of the run had more than 3 of its attempts live.

Each attempt's life is read back from its job: ``attempted_at`` (stamped by the claim after
its count of live attempts, flow_candidates.sql) to ``finalized_at`` (stamped by the finish
before it commits). A claim counts as ended only the attempts whose finish committed before
its count, and each of those was stamped before the claim's own stamp; the claims after it
waited for its commit. So where the limit held, no instant is inside more than `limit` of the
stamped intervals, and a claim that overran the limit shows as a deeper overlap. The same
run without the limit shows that the measure does see more than 3 when they happen.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from awa.adapters.postgres import PostgresStore
from awa.domain import JobState, NewJob
from tests.postgres.test_real_processes import Workers, wait_for

JOBS = 120
PROCESSES = 4
SLOTS_PER_PROCESS = 2


@pytest.fixture
def workers(pg_clean_url: str) -> Iterator[Workers]:
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS worker_events (worker text, job_id bigint, event text,"
            " detail text, at timestamptz NOT NULL DEFAULT clock_timestamp())"
        )
        conn.execute("TRUNCATE worker_events")
    started = Workers(pg_clean_url)
    yield started
    started.close()


def _deepest_overlap(url: str) -> int:
    """The most attempts of the queue whose [attempted_at, finalized_at] hold one instant (an
    end and a start at the same microsecond do not overlap: the end was committed first)."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT attempted_at, finalized_at FROM awa.jobs WHERE queue = 'api'"
        ).fetchall()
    edges = sorted([(start, 1) for start, _ in rows] + [(end, -1) for _, end in rows])
    live = deepest = 0
    for _, step in edges:
        live += step
        deepest = max(deepest, live)
    return deepest


@pytest.mark.parametrize("limit", [3, None], ids=["limit-3", "no-limit"])
def test_four_processes_never_run_more_attempts_than_the_queue_limit(
    pg_clean_url: str, workers: Workers, limit: int | None
) -> None:
    with PostgresStore(pg_clean_url, pool_size=2) as store:
        if limit is not None:
            store.configure_queue("api", concurrency_limit=limit)
        store.insert([NewJob(kind="work", queue="api", args={"name": "x"}) for _ in range(JOBS)])
        for n in range(PROCESSES):
            workers.start(
                f"w{n}", "nap", "--queue", "api", "--nap", "0.03",
                "--concurrency", str(SLOTS_PER_PROCESS),
                "--heartbeat-interval", "1", "--staleness", "60",
            )  # fmt: skip
        wait_for(
            lambda: store.count_jobs(state=JobState.COMPLETED, queue="api") == JOBS,
            "every job completed",
            workers,
        )
        assert store.count_jobs(queue="api") == JOBS
        claimed_twice = store.list_jobs(queue="api", limit=JOBS)
        assert all(job.attempt == 1 for job in claimed_twice)  # no rescue muddled the lives
    deepest = _deepest_overlap(pg_clean_url)
    if limit is None:
        assert deepest > 3, "the measure never saw more than 3 at once: it proves nothing"
    else:
        assert deepest == limit  # held, and reached: the slots beyond it were not needed
