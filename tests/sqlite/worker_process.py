"""A real worker process for tests/sqlite/test_real_processes.py.

``python tests/sqlite/worker_process.py DB_PATH NAME LOG`` works the ``default`` queue with an
``awa.Client("sqlite:///DB_PATH")`` whose ``work`` handler appends ``job_id run_lease`` to
``LOG`` (one line, flushed, before it returns: a SIGKILL loses no line of a handler that ran)
and completes. SIGTERM shuts it down cleanly; SIGKILL is how the test crashes it.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import threading
from dataclasses import dataclass

import awa


@dataclass
class Work:
    n: int


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("name")
    parser.add_argument("log")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    client = awa.Client(f"sqlite:///{args.path}")
    runs = open(args.log, "a", buffering=1)  # noqa: SIM115 - open for the process's life

    @client.task(Work, kind="work")
    async def work(job: awa.Job[Work]) -> None:
        runs.write(f"{job.id} {job.run_lease}\n")
        await asyncio.sleep(0)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    client.start(
        [("default", args.concurrency)],
        heartbeat_interval=0.2,
        heartbeat_staleness=1.0,
        poll_interval=0.1,
        runtime_config=awa.RuntimeConfig(maintenance_interval_s=0.3),
    )
    while not stop.wait(0.2):  # woken by SIGTERM's handler
        pass
    client.shutdown(timeout=5)


if __name__ == "__main__":
    main()
