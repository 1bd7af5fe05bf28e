"""Real worker processes on PostgreSQL: crash recovery by SIGKILL, the poison-job rule for a
crash, a late finish across two workers, a cancel that crosses processes over LISTEN/NOTIFY,
and maintenance leadership moving when its holder is killed.

Workers are ``tests/postgres/worker_process.py`` subprocesses (``awa.Client(url)``) with short
heartbeat and staleness settings; they report to the ``worker_events`` table, which the tests
poll with a bounded timeout (never a fixed sleep).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from awa.adapters.postgres import PostgresStore
from awa.domain import JobState, NewJob

WORKER = Path(__file__).with_name("worker_process.py")
ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 20.0
HEARTBEAT_STALE = "heartbeat stale: worker presumed dead"


class Workers:
    """Starts worker processes and kills whatever is left at the end of the test."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._logs = Path(tempfile.mkdtemp(prefix="awa-workers-"))

    def start(self, name: str, mode: str, *options: str) -> subprocess.Popen[bytes]:
        log = (self._logs / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), self.url, name, mode, *options],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        self.procs[name] = proc
        return proc

    def output(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self._logs.iterdir())
        )

    def kill(self, name: str) -> None:
        proc = self.procs[name]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=WAIT_S)

    def stop(self, name: str) -> int:
        """SIGTERM: a clean shutdown; returns the exit code."""
        proc = self.procs[name]
        proc.send_signal(signal.SIGTERM)
        return proc.wait(timeout=WAIT_S)

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=WAIT_S)


@pytest.fixture
def url(pg_clean_url: str) -> str:
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS worker_events (worker text, job_id bigint, event text,"
            " detail text, at timestamptz NOT NULL DEFAULT clock_timestamp())"
        )
        conn.execute("TRUNCATE worker_events")
    return pg_clean_url


@pytest.fixture
def workers(url: str) -> Iterator[Workers]:
    started = Workers(url)
    yield started
    started.close()


@pytest.fixture
def store(url: str) -> Iterator[PostgresStore]:
    """On the database's clock, like the workers."""
    with PostgresStore(url, pool_size=2) as s:
        yield s


def events(url: str, event: str, worker: str | None = None) -> list[tuple[str, int | None, str]]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT worker, job_id, detail FROM worker_events"
            " WHERE event = %s AND (%s::text IS NULL OR worker = %s) ORDER BY at",
            (event, worker, worker),
        ).fetchall()
    return [(w, j, d) for w, j, d in rows]


def wait_for(condition: Callable[[], Any], what: str, workers: Workers) -> Any:
    """Poll ``condition`` until it returns something truthy; fail after ``WAIT_S``."""
    give_up = time.monotonic() + WAIT_S
    while time.monotonic() < give_up:
        result = condition()
        if result:
            return result
        time.sleep(0.05)  # the poll period, not a synchronisation
    raise AssertionError(f"{what}: not within {WAIT_S}s\n{workers.output()}")


def insert(store: PostgresStore, **fields: Any) -> int:
    [job] = store.insert([NewJob(kind="work", args={"name": "report"}, **fields)])
    return job.id


def test_killed_worker_is_rescued_and_its_job_completes_once_elsewhere(
    url: str, store: PostgresStore, workers: Workers
) -> None:
    workers.start("dying", "hang")
    job_id = insert(store)
    wait_for(
        lambda: events(url, "started", "dying"), "the job started on the dying worker", workers
    )
    workers.kill("dying")  # SIGKILL mid-job: no finish, no heartbeats, no goodbye
    workers.start("rescuer", "complete")
    done = wait_for(
        lambda: (j := store.get_job(job_id)).state is JobState.COMPLETED and j,
        "the job completed after the rescue",
        workers,
    )
    assert [e.error for e in done.errors] == [HEARTBEAT_STALE]
    assert (done.attempt, done.run_lease) == (2, 2)
    assert events(url, "completed") == [("rescuer", job_id, "2")]  # exactly once, attempt 2


def test_killed_worker_with_one_attempt_dead_letters_with_heartbeat_stale(
    url: str, store: PostgresStore, workers: Workers
) -> None:
    workers.start("dying", "hang", "--dlq")
    job_id = insert(store, max_attempts=1)
    wait_for(lambda: events(url, "started", "dying"), "the job started", workers)
    workers.kill("dying")
    workers.start("rescuer", "complete", "--dlq")
    [entry] = wait_for(lambda: store.list_dlq(queue="default"), "the job reached the DLQ", workers)
    assert entry.job.id == job_id
    assert entry.reason == "heartbeat_stale"
    assert entry.job.errors[-1].error == HEARTBEAT_STALE
    assert events(url, "completed") == []


def test_late_finish_from_a_presumed_dead_worker_is_dropped_and_the_new_one_stands(
    url: str, store: PostgresStore, workers: Workers
) -> None:
    # alive but silent: it heartbeats once a minute and leaves maintenance to the others; one
    # slot, so it cannot claim the job again itself while its first handler blocks
    workers.start(
        "slow", "late", "--concurrency", "1", "--heartbeat-interval", "60", "--staleness", "180",
        "--no-maintenance",
    )  # fmt: skip
    job_id = insert(store)
    wait_for(lambda: events(url, "started", "slow"), "the job started on the slow worker", workers)
    workers.start("fast", "complete")
    wait_for(
        lambda: store.get_job(job_id).state is JobState.COMPLETED,
        "the fast worker completed the job",
        workers,
    )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO worker_events (worker, job_id, event) VALUES ('test', %s, 'release')",
            (job_id,),
        )
    wait_for(lambda: events(url, "late_finish", "slow"), "the slow handler returned", workers)
    assert workers.stop("slow") == 0  # a clean shutdown flushes its (stale) finish first
    [(_, _, stats)] = wait_for(lambda: events(url, "stats", "slow"), "slow's stats", workers)
    assert json.loads(stats)["stale_finishes"] == 1
    done = store.get_job(job_id)
    assert (done.state, done.run_lease, done.attempt) == (JobState.COMPLETED, 2, 2)
    assert [e.error for e in done.errors] == [HEARTBEAT_STALE]
    assert events(url, "completed") == [("fast", job_id, "2")]


def test_cancel_reaches_a_running_async_handler_in_another_process(
    url: str, store: PostgresStore, workers: Workers
) -> None:
    # heartbeats once a minute: only the NOTIFY can deliver the cancel within the wait
    workers.start("worker", "hang", "--heartbeat-interval", "60", "--staleness", "180")
    job_id = insert(store)
    wait_for(lambda: events(url, "started", "worker"), "the job started", workers)
    store.cancel(job_id)
    [(_, cancelled_id, is_cancelled)] = wait_for(
        lambda: events(url, "cancelled", "worker"), "the handler was cancelled", workers
    )
    assert (cancelled_id, is_cancelled) == (job_id, "True")
    assert store.get_job(job_id).state is JobState.CANCELLED
    assert workers.stop("worker") == 0
    [(_, _, stats)] = wait_for(lambda: events(url, "stats", "worker"), "the stats", workers)
    assert json.loads(stats)["finished"] == 0  # the cancelled attempt wrote nothing


def test_maintenance_moves_to_the_survivor_when_the_leader_is_killed(
    url: str, store: PostgresStore, workers: Workers
) -> None:
    for name in ("first", "second"):
        workers.start(name, "complete")
    ready = wait_for(lambda: len(r := events(url, "ready")) == 2 and r, "both ready", workers)
    owners = {name: json.loads(detail)["owner"] for name, _, detail in ready}
    leader = wait_for(store.leader, "a maintenance leader", workers)
    [dead] = [name for name, owner in owners.items() if owner == leader]
    [alive] = [name for name in owners if name != dead]
    workers.kill(dead)
    # a job only maintenance can make available: no worker claims this queue
    with psycopg.connect(url, autocommit=True) as conn:
        [(soon,)] = conn.execute("SELECT now() + interval '0.5 seconds'").fetchall()
    [scheduled] = store.insert([NewJob(kind="work", queue="unworked", run_at=soon)])
    assert scheduled.state is JobState.SCHEDULED
    wait_for(lambda: store.leader() == owners[alive], "the survivor leads", workers)
    wait_for(
        lambda: store.get_job(scheduled.id).state is JobState.AVAILABLE,
        "the survivor's maintenance promoted the job",
        workers,
    )
