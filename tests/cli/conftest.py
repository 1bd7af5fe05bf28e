"""PostgreSQL for the CLI tests, and a way to run ``awa`` as a real subprocess.

The server and its ``create_database`` / ``empty_database`` fixtures come from the shared
plugin ``tests/pg_fixtures.py`` (a throwaway cluster, or ``AWA_TEST_DATABASE_URL``; under ``CI``
a missing server fails the run), registered by the root conftest: one server per session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import psycopg
import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore, migrate
from awa.domain import Fail, Job, JobState, NewJob
from awa.ports import Finish

ROOT = Path(__file__).resolve().parents[2]
AWA_TIMEOUT_S = 60


@attrs.frozen
class Ran:
    """One finished ``awa`` process."""

    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        assert self.code == 0, f"awa {' '.join(self.args)} failed: {self.stderr}"
        return json.loads(self.stdout)

    def assert_one_line_error(self, *fragments: str, code: int = 1) -> str:
        """The failure an operator should see: the exit code, one line on stderr, no
        traceback, and the words that say what went wrong."""
        assert self.code == code, (self.code, self.stdout, self.stderr)
        assert "Traceback" not in self.stderr + self.stdout
        lines = self.stderr.splitlines()
        assert len(lines) == 1, self.stderr
        for fragment in fragments:
            assert fragment in lines[0], lines[0]
        return lines[0]


def run_awa(
    *args: str, url: str | None, stdin: str | None = "", env: dict[str, str] | None = None
) -> Ran:
    """``python -m awa ARGS`` with ``url`` in ``AWA_DATABASE_URL``; stdin is a pipe (not a
    terminal) holding ``stdin``."""
    environment = {
        k: v for k, v in os.environ.items() if k not in ("AWA_DATABASE_URL", "DATABASE_URL")
    }
    if url is not None:
        environment["AWA_DATABASE_URL"] = url
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, "-m", "awa", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment,
        cwd=ROOT,
        timeout=AWA_TIMEOUT_S,
    )
    return Ran(tuple(args), done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="session")
def cli_database(create_database: Callable[[], str]) -> str:
    """One migrated database for this folder's tests."""
    url = create_database()
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
    return url


@pytest.fixture
def db_url(cli_database: str) -> str:
    """The migrated database with empty tables (ids start at 1 again)."""
    with psycopg.connect(cli_database, autocommit=True) as conn:
        conn.execute(
            "TRUNCATE awa.jobs, awa.dlq, awa.queues, awa.schedules, awa.workers RESTART IDENTITY"
        )
    return cli_database


@pytest.fixture
def awa(db_url: str) -> Callable[..., Ran]:
    """Run ``awa`` against the test database."""

    def run(*args: str, stdin: str | None = "", env: dict[str, str] | None = None) -> Ran:
        return run_awa(*args, url=db_url, stdin=stdin, env=env)

    return run


@pytest.fixture
def store(db_url: str) -> Iterator[PostgresStore]:
    """A store on the test database for arranging jobs, on the database's clock."""
    with PostgresStore(db_url, pool_size=4) as s:
        yield s


@pytest.fixture
def clocked_store(db_url: str) -> Iterator[tuple[PostgresStore, ManualClock]]:
    """A store with a manual clock: arrange heartbeats that go stale without waiting."""
    clock = ManualClock()
    with PostgresStore(db_url, clock=clock, pool_size=2) as s:
        yield s, clock


def insert(store: PostgresStore, kind: str = "send_email", **fields: Any) -> Job:
    [job] = store.insert([NewJob(kind=kind, **fields)])
    return job


def claim_one(store: PostgresStore, queue: str) -> Job:
    [job] = store.claim(queue, limit=1)
    return job


def fail_to_dlq(store: PostgresStore, queue: str, kind: str, error: str = "boom") -> Job:
    """A job on a DLQ-enabled ``queue`` that failed its only attempt: now a dead-letter entry."""
    store.set_dlq_enabled(queue, True)
    insert(store, kind, queue=queue, max_attempts=1)
    job = claim_one(store, queue)
    [finished] = store.finish([Finish(job.lease, Fail(f"ValueError: {error}"))])
    assert finished.job.state is JobState.FAILED  # type: ignore[union-attr]
    return job
