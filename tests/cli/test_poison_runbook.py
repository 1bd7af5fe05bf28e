"""The seed's runbook for a poison job, end to end, with real worker processes.

A ``transcode`` job kills its worker process (SIGKILL) on every attempt. The test plays the
process supervisor (it starts a new worker when one dies) and the maintenance leader (it calls
``store.rescue`` with the workers' 2 s heartbeat staleness); the operator's part is the ``awa``
command, as a subprocess:

1. recognise it: ``awa job dump`` shows the same ``heartbeat stale`` error attempt after
   attempt, and the diagnosis points at the process;
2. stop the kind: ``awa queue pause``; the last attempt's rescue (maintenance goes on while
   paused) spends ``max_attempts`` and the job lands in the DLQ as ``heartbeat_stale``;
3. redrive after the fix: a worker whose handler succeeds, ``awa queue resume``, then
   ``awa dlq retry-bulk --queue --kind``; the job completes with a fresh attempt budget.

Every wait is on a condition in the database or a process, with a bound.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from awa.adapters.postgres import PostgresStore
from awa.domain import JobState, NewJob
from tests.cli.conftest import ROOT, Ran

T = TypeVar("T")
WORKER = Path(__file__).with_name("poison_worker.py")
QUEUE, KIND = "media", "transcode"
MAX_ATTEMPTS = 3
STALENESS_S = 2.0  # the workers' heartbeat_staleness
WAIT_S = 30.0


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float = WAIT_S) -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.05)


@contextmanager
def worker(url: str, mode: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, str(WORKER), url, QUEUE, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def crash_one_attempt(url: str, store: PostgresStore, job_id: int, attempt: int) -> None:
    """A poison worker claims attempt ``attempt`` (once the backoff allows) and dies."""
    with worker(url, "poison") as process:
        code = process.wait(timeout=WAIT_S)
        assert code == -signal.SIGKILL, process.stderr.read() if process.stderr else code
    job = store.get_job(job_id)
    assert (job.state, job.attempt, job.run_lease) == (JobState.RUNNING, attempt, attempt)


def rescue_dead_attempt(store: PostgresStore, job_id: int) -> JobState:
    """Maintenance: once the dead worker's heartbeat is stale, its attempt ends."""
    rescued = wait_for(
        "the dead worker's heartbeat to go stale",
        lambda: store.rescue(staleness_s=STALENESS_S),
        timeout_s=STALENESS_S + WAIT_S,
    )
    assert [r.job.id for r in rescued] == [job_id]
    return rescued[0].job.state


def test_a_job_that_kills_its_worker_is_recognised_paused_dead_lettered_and_redriven(
    db_url: str, store: PostgresStore, awa: Callable[..., Ran]
) -> None:
    [job] = store.insert(
        [NewJob(kind=KIND, queue=QUEUE, args={"video": "cat.mp4"}, max_attempts=MAX_ATTEMPTS)]
    )

    for attempt in range(1, MAX_ATTEMPTS):
        crash_one_attempt(db_url, store, job.id, attempt)
        assert rescue_dead_attempt(store, job.id) is JobState.RETRYABLE

    # 1. recognise it
    dump = awa("job", "dump", str(job.id), "--json").json
    errors = dump["job"]["errors"]
    assert [e["attempt"] for e in errors] == [1, 2]
    assert {e["error"] for e in errors} == {"heartbeat stale: worker presumed dead"}
    assert dump["points_at_process"] is True
    assert "process" in dump["diagnosis"]
    human = awa("job", "dump", str(job.id))
    assert "diagnosis: 2 attempts in a row ended with" in human.stdout
    assert "look at the process, not the handler" in human.stdout

    # the last attempt dies too, while the operator stops the kind
    crash_one_attempt(db_url, store, job.id, MAX_ATTEMPTS)
    # 2. stop the kind
    assert awa("queue", "pause", QUEUE, "--json").json == {"queue": QUEUE, "paused": True}
    assert rescue_dead_attempt(store, job.id) is JobState.FAILED  # rescue goes on while paused
    [entry] = awa("dlq", "list", "--queue", QUEUE, "--json").json["entries"]
    assert entry["reason"] == "heartbeat_stale"
    assert entry["job"]["id"] == job.id
    assert entry["job"]["attempt"] == MAX_ATTEMPTS
    assert len(entry["job"]["errors"]) == MAX_ATTEMPTS
    [stats] = awa("queue", "stats", "--queue", QUEUE, "--json").json["queues"]
    assert stats["paused"] is True
    assert stats["dlq_depth"] == 1

    # 3. redrive after the fix
    with worker(db_url, "fixed") as fixed:
        assert fixed.stdout is not None
        assert fixed.stdout.readline().strip() == "ready"
        assert awa("queue", "resume", QUEUE, "--json").json["paused"] is False
        redriven = awa("dlq", "retry-bulk", "--queue", QUEUE, "--kind", KIND, "--json").json
        assert redriven["retried"] == 1
        [back] = redriven["jobs"]
        assert (back["id"], back["state"], back["attempt"]) == (job.id, "available", 0)
        assert back["run_lease"] == MAX_ATTEMPTS  # kept: the lease never goes down
        done = wait_for(
            "the fixed worker to complete the job",
            lambda: (j := store.get_job(job.id)).state is JobState.COMPLETED and j,
        )
        assert fixed.stdin is not None
        fixed.stdin.close()  # the worker shuts down cleanly
        assert fixed.wait(timeout=WAIT_S) == 0
        assert "transcoded cat.mp4 on attempt 1" in fixed.stdout.read()

    assert (done.attempt, done.run_lease) == (1, MAX_ATTEMPTS + 1)
    assert len(done.errors) == MAX_ATTEMPTS  # the history is kept for the post-mortem
    assert awa("dlq", "depth", "--json").json == {"total": 0, "queues": {}}
    final = awa("job", "dump", str(job.id), "--json").json
    assert final["job"]["state"] == "completed"
    assert final["error_rounds"] == [1, 1, 1]
    assert final["diagnosis"] is None  # the history stays, but the job is fine now
