"""The README's main-job command on its default store, a SQLite file next to the example:
a first run makes the file, a second reuses it, and a run finishes the jobs a run killed
with SIGKILL left behind (an attempt left running, a job never claimed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import SqliteStore
from awa.domain import JobState, NewJob

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "quickstart.py"


def _run(example: Path) -> str:
    result = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_quickstart_keeps_its_jobs_in_a_file_next_to_it_and_reuses_it(tmp_path: Path) -> None:
    example = Path(shutil.copy(EXAMPLE, tmp_path))
    first = _run(example)
    assert "job 2 send_email: completed after 2 attempt(s)" in first
    second = _run(example)
    assert "job 3 send_email: completed after 1 attempt(s)" in second
    assert "job 4 send_email: completed after 2 attempt(s)" in second
    with SqliteStore(str(tmp_path / "quickstart.db"), create=False) as store:
        assert store.count_jobs(state=JobState.COMPLETED) == 4


def test_quickstart_finishes_what_a_killed_run_left(tmp_path: Path) -> None:
    example = Path(shutil.copy(EXAMPLE, tmp_path))
    # what a run killed mid-way leaves: one attempt running (its last heartbeat 10 s ago,
    # nobody left to finish it) and one job nobody claimed yet
    clock = ManualClock(datetime.now(timezone.utc) - timedelta(seconds=10))
    with SqliteStore(str(tmp_path / "quickstart.db"), clock=clock) as killed:
        args = {"to": "eve@example.com", "subject": "Left behind"}
        left = killed.insert([NewJob(kind="send_email", queue="email", args=args)] * 2)
        [running] = killed.claim("email", limit=1)
    out = _run(example)
    assert "finishing 2 job(s) an earlier run left unfinished" in out
    assert f"job {running.id} send_email: completed after 2 attempt(s)" in out
    assert f"job {left[1].id} send_email: completed after 1 attempt(s)" in out
    with SqliteStore(str(tmp_path / "quickstart.db"), create=False) as store:
        rescued = store.get_job(running.id)
    assert rescued.errors[0].error == "heartbeat stale: worker presumed dead"
    assert rescued.errors[0].at - running.attempted_at > timedelta(seconds=10)
