"""A Django worker across a PostgreSQL restart: handlers that use Django's own connection
(a sync handler on its thread, an async one through ``sync_to_async``) keep working, because
awa closes Django's unusable and expired connections before and after every handler.

The worker is ``python -m awa worker tests.postgres.django_worker_app:client`` on a server of
this module's own (``own_cluster``: restarting the session's server would disturb other
tests), a fresh database for each test. The test waits on the jobs' states, never for a fixed
time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from awa.adapters.postgres import PostgresStore, migrate
from awa.domain import Job, JobState, NewJob
from tests.pg_fixtures import LocalCluster
from tests.processes import WAIT_S, wait_for

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.postgres.django_worker_app:client"
CONCURRENCY = 2
#: Django's advice for long-lived connections: reuse them, check them at the start of each use
PERSISTENT_CHECKED = {"CONN_MAX_AGE": None, "CONN_HEALTH_CHECKS": True}
#: ``wait(condition, what)``: the condition's value once truthy; fails with the worker's log
Wait = Callable[[Callable[[], Any], str], Any]


def _database(cluster: LocalCluster) -> str:
    """A fresh database on ``cluster`` with awa's schema and the handlers' ``visits`` table."""
    name = f"awa_django_{os.urandom(6).hex()}"
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = f"{cluster.url.rsplit('/', 1)[0]}/{name}"  # a URL: Django's settings take its parts
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        conn.execute("CREATE TABLE visits (job_id bigint NOT NULL)")
    return url


@contextmanager
def _worker(url: str, database: dict[str, Any]) -> Iterator[Wait]:
    """``awa worker`` on ``url`` with Django's ``default`` database there too (``database``
    added to its settings)."""
    log_path = Path(tempfile.mkdtemp(prefix="awa-django-")) / "worker.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "awa", "worker", APP, "--queue", f"default={CONCURRENCY}"],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
            env={**os.environ, "AWA_DATABASE_URL": url,
                 "AWA_TEST_DJANGO_DATABASE": json.dumps(database),
                 "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(ROOT)},
        )  # fmt: skip
        try:
            yield lambda condition, what: wait_for(
                proc, condition, what, lambda: log_path.read_text(errors="replace")
            )
        finally:
            proc.kill()
            proc.wait(timeout=WAIT_S)


def _insert(url: str, kind: str, count: int) -> list[int]:
    with PostgresStore(url, pool_size=1) as store:
        jobs = store.insert([NewJob(kind=kind, args={"n": n}) for n in range(count)])
    return [job.id for job in jobs]


def _jobs(url: str, ids: list[int]) -> list[Job]:
    with PostgresStore(url, pool_size=1) as store:
        found = [store.get_job(job_id) for job_id in ids]
    assert all(job is not None for job in found)
    return [job for job in found if job is not None]


def _completed(job: Job) -> bool:
    return job.state is JobState.COMPLETED


def _first_attempt_over(job: Job) -> bool:
    return job.state is JobState.COMPLETED or bool(job.errors)


def _when_all(url: str, ids: list[int], over: Callable[[Job], bool]) -> list[Job] | None:
    """The jobs, once ``over`` holds for every one of them."""
    jobs = _jobs(url, ids)
    return jobs if all(over(job) for job in jobs) else None


def _warm_up(url: str, kind: str, wait: Wait) -> list[int]:
    """Jobs enough for every handler thread to open its Django connection, all completed."""
    ids = _insert(url, kind, 2 * CONCURRENCY)
    jobs = wait(lambda: _when_all(url, ids, _first_attempt_over), "the jobs before the restart")
    assert [job.state for job in jobs] == [JobState.COMPLETED] * len(ids), jobs
    return ids


def _visited(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        return [job_id for (job_id,) in conn.execute("SELECT job_id FROM visits ORDER BY job_id")]


@pytest.mark.parametrize("kind", ["visit", "visit_async"])
@pytest.mark.parametrize(
    "database", [{}, PERSISTENT_CHECKED], ids=["CONN_MAX_AGE=0", "persistent+health-checks"]
)
def test_every_job_after_a_database_restart_completes_on_its_first_attempt(
    own_cluster: LocalCluster, kind: str, database: dict[str, Any]
) -> None:
    url = _database(own_cluster)
    with _worker(url, database) as wait:
        before = _warm_up(url, kind, wait)
        own_cluster.restart()
        after = _insert(url, kind, 6)
        jobs = wait(lambda: _when_all(url, after, _first_attempt_over), "the first attempts")
    assert [(job.state, job.attempt, [e.error for e in job.errors]) for job in jobs] == [
        (JobState.COMPLETED, 1, [])
    ] * 6
    assert _visited(url) == sorted(before + after)


def test_persistent_connections_without_health_checks_cost_one_retry_per_thread(
    own_cluster: LocalCluster,
) -> None:
    """Django notices a dead persistent connection only when it fails: the first job on each
    handler thread that held one fails once, and its retry (on a new connection) completes."""
    url = _database(own_cluster)
    with _worker(url, {"CONN_MAX_AGE": None}) as wait:
        before = _warm_up(url, "visit", wait)
        own_cluster.restart()
        after = _insert(url, "visit", 6)
        jobs = wait(lambda: _when_all(url, after, _completed), "the jobs after the restart")
    retried = [job for job in jobs if job.attempt > 1]
    assert 1 <= len(retried) <= CONCURRENCY
    for job in retried:
        assert job.attempt == 2
        [error] = job.errors
        assert error.error.startswith("OperationalError")
    assert _visited(url) == sorted(before + after)
