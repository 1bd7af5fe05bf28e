"""The operator CLI on a SQLite file, through a real ``awa`` subprocess: ``migrate`` makes
the file, operator commands read and change it, and a path that names no database is one
line that says how to make one (and makes nothing)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import LATEST_VERSION, SqliteStore
from awa.adapters.sqlite.migrations import MIGRATIONS
from awa.domain import JobState, NewJob
from tests.cli.conftest import Ran, run_awa

Awa = Callable[..., Ran]


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'jobs.db'}"


@pytest.fixture
def awa(url: str) -> Awa:
    def run(*args: str, stdin: str | None = "") -> Ran:
        return run_awa("--database-url", url, *args, url=None, stdin=stdin)

    return run


def test_migrate_makes_the_file_once_and_then_has_nothing_to_do(awa: Awa) -> None:
    every = [m.version for m in MIGRATIONS]
    assert awa("migrate", "--json").json == {"applied": every, "version": LATEST_VERSION}
    assert awa("migrate", "--json").json == {"applied": [], "version": LATEST_VERSION}


def test_a_path_with_no_database_is_one_line_and_no_file_is_made(awa: Awa, tmp_path: Path) -> None:
    awa("job", "dump", "7").assert_one_line_error("no SQLite database at", "awa migrate")
    assert not (tmp_path / "jobs.db").exists()


def test_job_dump_list_cancel_and_retry_on_a_sqlite_file(awa: Awa, tmp_path: Path) -> None:
    clock = ManualClock()
    with SqliteStore(str(tmp_path / "jobs.db"), clock=clock) as store:
        store.insert([NewJob(kind="transcode", queue="media", args={"n": n}) for n in range(8)])
        [claimed] = store.claim("media", limit=1)
        clock.advance(120)
        [rescued] = store.rescue(staleness_s=90)
    assert rescued.job.state is JobState.RETRYABLE
    dump = awa("job", "dump", "7", "--json").json
    assert (dump["job"]["id"], dump["job"]["args"]) == (7, {"n": 6})
    first = awa("job", "dump", str(claimed.id))
    assert first.code == 0
    assert "heartbeat stale" in first.stdout
    listed = awa("job", "list", "--queue", "media", "--json").json
    assert [job["id"] for job in listed["jobs"]] == list(range(8, 0, -1))
    assert awa("job", "cancel", "7", "--json").json["job"]["state"] == "cancelled"
    assert awa("job", "retry", "7", "--json").json["job"]["state"] == "available"
    stats = awa("queue", "stats", "--json").json
    [media] = [queue for queue in stats["queues"] if queue["queue"] == "media"]
    assert media["counts"]["available"] == 7
