"""A worker's log through a database outage: one WARNING per service when the database is
lost, one INFO when it is back, no traceback, no ERROR, no psycopg pool line, and the jobs
inserted after it all complete.

Before: every stale pooled connection logged ``ERROR ... retrying in 1.0s`` with a 45-line
traceback every second, and psycopg's pool added its own warning at each reconnect attempt.
The worker runs as ``awa worker`` on a server of this module's own (``own_cluster``), which
the test stops and starts again; it waits on the log and on job states, never for a time.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql

from awa.adapters.postgres import PostgresStore, migrate
from awa.domain import JobState, NewJob
from tests.pg_fixtures import LocalCluster
from tests.processes import WAIT_S, wait_for

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.postgres.worker_app:client"
_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (\w+) (\S+): (.*)$")


def _database(cluster: LocalCluster) -> str:
    name = f"awa_outage_{os.urandom(6).hex()}"
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = f"{cluster.url.rsplit('/', 1)[0]}/{name}"
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
    return url


def _states(url: str, ids: list[int]) -> list[JobState]:
    with PostgresStore(url, pool_size=1) as store:
        return [store.get_job(job_id).state for job_id in ids]


def _insert(url: str, count: int) -> list[int]:
    with PostgresStore(url, pool_size=1) as store:
        return [j.id for j in store.insert([NewJob(kind="work", args={"mode": "ok"})] * count)]


def test_an_outage_is_one_warning_and_one_recovery_line_a_service(
    own_cluster: LocalCluster,
) -> None:
    url = _database(own_cluster)
    log_path = Path(tempfile.mkdtemp(prefix="awa-outage-")) / "worker.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "awa", "worker", APP, "--queue", "default=2"],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
            env={**os.environ, "AWA_DATABASE_URL": url, "PYTHONPATH": str(ROOT / "src")},
        )  # fmt: skip

        def read() -> str:
            return log_path.read_text(errors="replace")

        def wait(condition: object, what: str) -> object:
            return wait_for(proc, condition, what, read)  # type: ignore[arg-type]

        try:
            before = _insert(url, 3)
            wait(lambda: set(_states(url, before)) == {JobState.COMPLETED}, "jobs before")
            own_cluster.halt()
            try:
                wait(lambda: " WARNING awa." in read(), "the worker noticing the outage")
            finally:
                own_cluster.resume()
            after = _insert(url, 6)
            wait(lambda: set(_states(url, after)) == {JobState.COMPLETED}, "jobs after")
            wait(lambda: "works again" in read(), "the worker saying the database is back")
        finally:
            proc.terminate()
            proc.wait(timeout=WAIT_S)
    lines = read().splitlines()
    records = [m.groups() for m in map(_LINE.match, lines) if m]
    assert len(records) == len(lines), "every line is one record, no traceback:\n" + read()
    levels = [level for level, _, _ in records]
    assert "ERROR" not in levels, read()
    assert not [name for _, name, _ in records if name.startswith("psycopg")], read()
    warned = [message.split(" ", 1)[0] for level, _, message in records if level == "WARNING"]
    assert warned, read()
    assert len(warned) == len(set(warned)), f"one WARNING a service, got {warned}"
    back = [m for level, _, m in records if level == "INFO" and "works again" in m]
    assert len(back) <= len(warned), read()
