"""The operator CLI on a SQLite file, through a real ``awa`` subprocess: ``migrate`` makes
the file, operator commands read and change it, and a path that names no database is one
line that says how to make one (and makes nothing)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import LATEST_VERSION, SqliteStore
from awa.adapters.sqlite.migrations import MIGRATIONS
from awa.domain import Fail, JobState, NewJob
from awa.ports import Finish
from tests.cli.conftest import Ran, run_awa
from tests.planting import plant_in_sqlite

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


def test_a_job_whose_run_at_cannot_be_read_is_listed_dumped_and_cancelled(
    awa: Awa, tmp_path: Path
) -> None:
    """A year-10000 run_at broke ``awa job list``, ``dump`` and ``cancel``: they show what is
    stored instead of failing, and the cancel goes through."""
    clock = ManualClock()
    with SqliteStore(str(tmp_path / "jobs.db"), clock=clock) as store:
        [later] = store.insert([NewJob(kind="report", run_at=clock.now() + timedelta(hours=1))])
    plant_in_sqlite(tmp_path / "jobs.db", later.id, "run_at", too_late=True)
    listed = awa("job", "list")
    assert listed.code == 0, listed
    assert f"{2**62} (as stored: after 9999-01-01" in listed.stdout
    dumped = awa("job", "dump", str(later.id))
    assert dumped.code == 0, dumped
    assert "after 9999-01-01, the latest time awa reads" in dumped.stdout
    as_json = awa("--json", "job", "dump", str(later.id)).json
    assert as_json["job"]["unreadable"] == [
        {
            "column": "run_at",
            "raw": str(2**62),
            "reason": "after 9999-01-01, the latest time awa reads",
        }
    ]
    assert awa("job", "cancel", str(later.id)).code == 0


def test_a_retry_at_a_later_time_waits_for_it_and_a_bad_time_is_one_line(
    awa: Awa, tmp_path: Path
) -> None:
    clock = ManualClock()
    with SqliteStore(str(tmp_path / "jobs.db"), clock=clock) as store:
        store.set_dlq_enabled("dead", True)
        failed = []
        for queue in ("media", "dead"):
            [job] = store.insert([NewJob(kind="transcode", queue=queue, max_attempts=1)])
            [claimed] = store.claim(queue, limit=1)
            store.finish([Finish(claimed.lease, Fail("boom"))])
            failed.append(job.id)
    later = "2099-01-01T03:00:00Z"
    retried = awa("--json", "job", "retry", str(failed[0]), "--run-at", later).json
    assert (retried["job"]["state"], retried["job"]["run_at"]) == (
        "scheduled",
        "2099-01-01T03:00:00+00:00",
    )
    redriven = awa("dlq", "retry", str(failed[1]), "--run-at", later)
    assert "state scheduled until 2099-01-01 03:00:00Z," in redriven.stdout, redriven
    stats = awa("queue", "stats").stdout
    assert "default is the maintenance leader's RuntimeConfig: completed 1d" in stats
    awa("job", "retry", str(failed[0]), "--run-at", "2030-01-01T03:00").assert_one_line_error(
        "UTC offset", code=2
    )
    awa("job", "retry", str(failed[0]), "--run-at", "0001-01-01T00:00+14:00").assert_one_line_error(
        "run_at must be from 1970-01-01 to 9999-01-01 UTC", code=2
    )
