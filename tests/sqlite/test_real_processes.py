"""Four real worker processes on one SQLite file: 5,000 jobs, one worker SIGKILLed twice
mid-run. Every job is completed exactly once in the store, none is lost: the jobs the killed
worker held are rescued (heartbeat stale) and completed by a worker, and no claim ever handed
one attempt to two processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from awa.adapters.sqlite import SqliteStore
from awa.domain import JobState, NewJob
from awa.ports import BATCH_SIZE_MAX

WORKER = Path(__file__).with_name("worker_process.py")
ROOT = Path(__file__).resolve().parents[2]
JOBS = 5000
WORKERS = 4
WAIT_S = 60.0
HEARTBEAT_STALE = "heartbeat stale: worker presumed dead"


class Workers:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.run_logs: dict[str, Path] = {}
        self.starts = 0

    def start(self, name: str) -> None:
        self.starts += 1
        log = (self.folder / f"{name}-{self.starts}.out").open("wb")
        self.run_logs[name] = self.folder / f"runs-{self.starts}.log"
        self.procs[name] = subprocess.Popen(
            [
                sys.executable,
                str(WORKER),
                str(self.folder / "jobs.db"),
                name,
                str(self.run_logs[name]),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )

    def kill(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGKILL)
        self.procs[name].wait(timeout=WAIT_S)

    def has_run(self, name: str) -> bool:
        """Whether the process ``name`` last started has run a handler: it is claiming."""
        log = self.run_logs[name]
        return log.exists() and log.stat().st_size > 0

    def output(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}"
            for p in sorted(self.folder.glob("*.out"))
        )

    def runs(self) -> list[tuple[int, int]]:
        """Every handler run any process made: ``(job id, run_lease)``."""
        found = []
        for log in self.folder.glob("runs-*.log"):
            for line in log.read_text().splitlines():
                job_id, lease = line.split()
                found.append((int(job_id), int(lease)))
        return found

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    started = Workers(tmp_path)
    yield started
    started.close()


def wait_for(condition: Callable[[], bool], what: str, workers: Workers) -> None:
    give_up = time.monotonic() + WAIT_S
    while time.monotonic() < give_up:
        if condition():
            return
        time.sleep(0.05)  # the poll period, not a synchronisation
    raise AssertionError(f"{what}: not within {WAIT_S}s\n{workers.output()}")


def test_four_processes_complete_5000_jobs_once_each_while_one_is_killed_twice(
    tmp_path: Path, workers: Workers
) -> None:
    with SqliteStore(str(tmp_path / "jobs.db")) as store:
        for first in range(0, JOBS, BATCH_SIZE_MAX):
            size = min(BATCH_SIZE_MAX, JOBS - first)
            store.insert([NewJob(kind="work", args={"n": first + i}) for i in range(size)])
        for number in range(WORKERS):
            workers.start(f"w{number}")

        def completed() -> int:
            return store.count_jobs(state=JobState.COMPLETED)

        for done_before_kill in (JOBS // 5, JOBS // 2):
            wait_for(lambda n=done_before_kill: completed() >= n, "jobs were completed", workers)
            # on a loaded machine the restarted w0 may still be starting: kill it at work
            wait_for(lambda: workers.has_run("w0"), "w0 ran a handler", workers)
            workers.kill("w0")  # SIGKILL mid-run: no finish, no heartbeat, no goodbye
            workers.start("w0")
        wait_for(lambda: completed() == JOBS, f"all {JOBS} jobs completed", workers)

        jobs = store.list_jobs(limit=BATCH_SIZE_MAX)
        assert store.count_jobs() == JOBS
        assert store.list_dlq() == []
        assert {job.state for job in jobs} == {JobState.COMPLETED}
    runs = workers.runs()
    assert max(Counter(runs).values()) == 1, "one attempt was handed to two handlers"
    ran = set(runs)
    # the accepted completion is the finish of an attempt that really ran, the job's last
    assert all((job.id, job.run_lease) in ran for job in jobs)
    rerun = [job for job in jobs if job.run_lease > 1]
    assert rerun, "the kills struck no job in flight"
    for job in rerun:  # only a job a killed worker held runs again, after its rescue
        assert [e.error for e in job.errors] == [HEARTBEAT_STALE] * (job.run_lease - 1)
