"""``awa worker`` as a real process on PostgreSQL: metrics that move, a SIGTERM that stops it
cleanly and releases what it could not finish, a log line for a failure; and a closed port
named at once.

The worker is ``python -m awa worker tests.postgres.worker_app:client`` (the database in
``AWA_DATABASE_URL``); the test waits on its endpoints and on the database, never for a fixed
time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from awa.adapters.postgres import PostgresStore
from awa.domain import JobState, NewJob
from tests.processes import WAIT_S, free_port, get, wait_for

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.postgres.worker_app:client"
RELEASED = "worker shut down before the attempt finished"


class WorkerProcess:
    """``awa worker`` in a subprocess, its stderr in a file."""

    def __init__(self, url: str, *options: str) -> None:
        self.metrics_port, self.health_port = free_port(), free_port()
        self.log_path = Path(tempfile.mkdtemp(prefix="awa-worker-")) / "worker.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "awa", "worker", APP,
             "--metrics-port", str(self.metrics_port), "--health-port", str(self.health_port),
             "--host", "127.0.0.1", *options],
            stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT,
            env={**os.environ, "AWA_DATABASE_URL": url, "PYTHONPATH": str(ROOT / "src")},
        )  # fmt: skip

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, condition: Callable[[], Any], what: str) -> Any:
        return wait_for(self.proc, condition, what, self.log)

    def metrics(self) -> str:
        return get(f"http://127.0.0.1:{self.metrics_port}/metrics")[1]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=WAIT_S)
        self._log.close()


@pytest.fixture
def store(pg_clean_url: str) -> Iterator[PostgresStore]:
    with PostgresStore(pg_clean_url, pool_size=2) as s:
        yield s


def _insert(store: PostgresStore, mode: str, **fields: Any) -> int:
    [job] = store.insert([NewJob(kind="work", args={"mode": mode}, **fields)])
    return job.id


def _counter(metrics: str, outcome: str) -> float:
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith("awa_attempts_total{") and f'outcome="{outcome}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_awa_worker_serves_metrics_stops_cleanly_on_sigterm_and_releases_the_hanging_job(
    pg_clean_url: str, store: PostgresStore
) -> None:
    worker = WorkerProcess(pg_clean_url, "--shutdown-timeout", "1", "--log-format", "json")
    try:
        ready = f"http://127.0.0.1:{worker.health_port}/readyz"
        worker.wait_for(lambda: get(ready)[0] == 200, "/readyz answered 200")
        status, body = get(f"http://127.0.0.1:{worker.health_port}/healthz")
        assert (status, json.loads(body)) == (200, {"alive": True})
        assert _counter(worker.metrics(), "completed") == 0

        done = [_insert(store, "ok") for _ in range(3)]
        failed = [_insert(store, "fail", max_attempts=1) for _ in range(2)]
        hanging = _insert(store, "hang", max_attempts=3)
        worker.wait_for(
            lambda: (
                all(store.get_job(i).state is JobState.COMPLETED for i in done)
                and all(store.get_job(i).state is JobState.FAILED for i in failed)
                and store.get_job(hanging).state is JobState.RUNNING
            ),
            "every job reached its state",
        )
        metrics = worker.wait_for(
            lambda: (m := worker.metrics()) and _counter(m, "failed") == 2 and m,
            "the failures counted",
        )
        assert _counter(metrics, "completed") == 3
        assert "awa_handler_duration_seconds_bucket" in metrics
        assert "awa_pickup_latency_seconds_count" in metrics

        worker.proc.send_signal(signal.SIGTERM)
        assert worker.proc.wait(timeout=WAIT_S) == 0
        for job_id in done:
            assert store.get_job(job_id).state is JobState.COMPLETED
        for job_id in failed:
            assert store.get_job(job_id).errors[-1].error == f"ValueError: bad row in job {job_id}"
        released = store.get_job(hanging)
        assert released.state in (JobState.RETRYABLE, JobState.AVAILABLE)
        assert released.errors[-1].error == RELEASED
        [again] = store.claim("default", limit=1)  # due at once: no staleness window to wait
        assert (again.id, again.attempt) == (hanging, 2)

        records = [json.loads(line) for line in worker.log().splitlines() if line.startswith("{")]
        warnings = [r for r in records if r["level"] == "WARNING" and r.get("job_id") in failed]
        assert {r["job_id"] for r in warnings} == set(failed)
        for record in warnings:
            assert str(record["job_id"]) in record["message"]
            assert (record["outcome"], record["error_type"]) == ("failed", "ValueError")
            assert record.keys() == _documented_log_line().keys()
        [release] = [r for r in records if r.get("outcome") == "released"]
        assert (release["level"], release["job_id"], release["error"]) == (
            "WARNING",
            hanging,
            RELEASED,
        )
        assert any("stopped (1 running attempts released)" in r["message"] for r in records)
    finally:
        worker.close()


def test_awa_worker_on_a_closed_port_fails_within_seconds_naming_the_port() -> None:
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "awa", "worker", APP],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={
            **os.environ,
            "AWA_DATABASE_URL": f"postgresql://awa@127.0.0.1:{port}/awa",
            "PYTHONPATH": str(ROOT / "src"),
        },
        timeout=WAIT_S,
    )
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("awa: error: ")
    assert f"127.0.0.1:{port}" in line
    # the driver's own reason, from the first attempt: not a pool timeout after waiting (1.7 s
    # wall time here, mostly imports; no timed assertion on a shared machine)
    assert "Connection refused" in line
    assert "timeout" not in line.lower()
    assert "Traceback" not in done.stderr


def _documented_log_line() -> dict[str, Any]:
    """The JSON log line docs/deployment.md shows."""
    page = (Path(__file__).parents[2] / "docs" / "deployment.md").read_text()
    return dict(json.loads(page.split("```json\n", 1)[1].split("\n```", 1)[0]))
