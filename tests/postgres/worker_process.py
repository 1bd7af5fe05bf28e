"""A real worker process for tests/postgres/test_real_processes.py.

``python tests/postgres/worker_process.py URL NAME MODE [options]`` works a queue with an
``awa.Client(URL)`` whose ``work`` handler behaves as ``MODE`` says:

* ``hang``: an async handler that never returns (until cancelled);
* ``complete``: an async handler that completes at once;
* ``late``: a sync handler that blocks until the test inserts a ``release`` event for its job,
  then returns (a finish that arrives after the job moved on);
* ``nap``: an async handler that sleeps ``--nap`` seconds and completes, recording nothing (so
  the only database traffic is awa's own: for tests that break the worker's network).

``--events-url`` sends the events to another URL than the client's (the client's may go
through a proxy the test black-holes). ``--periodic CRON`` registers a schedule named
``periodic`` that inserts a ``work`` job at every time ``CRON`` names (coalescing missed fires).

Everything the process observes goes to the ``worker_events`` table (the test polls it): ``ready``
once started, ``started`` / ``completed`` / ``cancelled`` / ``late_finish`` from handlers, and
``stats`` (the runtime's counters, JSON) after a clean shutdown. SIGTERM shuts it down cleanly;
SIGKILL is how the tests crash it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import threading
from dataclasses import dataclass

import attrs
import psycopg

import awa

RELEASE_WAIT_S = 30.0


@dataclass
class Work:
    name: str


def record(url: str, worker: str, event: str, job_id: int | None = None, detail: str = "") -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO worker_events (worker, job_id, event, detail) VALUES (%s, %s, %s, %s)",
            (worker, job_id, event, detail),
        )


def released(url: str, job_id: int) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT 1 FROM worker_events WHERE event = 'release' AND job_id = %s", (job_id,)
        ).fetchone()
    return row is not None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("name")
    parser.add_argument("mode", choices=["hang", "complete", "late", "nap"])
    parser.add_argument("--queue", default="default")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--heartbeat-interval", type=float, default=0.2)
    parser.add_argument("--staleness", type=float, default=1.0)
    parser.add_argument("--maintenance-interval", type=float, default=0.5)
    parser.add_argument("--no-maintenance", action="store_true")
    parser.add_argument("--dlq", action="store_true")
    parser.add_argument("--nap", type=float, default=0.05)
    parser.add_argument("--events-url")
    parser.add_argument("--periodic", metavar="CRON")
    args = parser.parse_args()
    name = args.name
    url = args.events_url or args.url  # where the events go
    client = awa.Client(args.url)

    if args.mode == "hang":

        @client.task(Work, queue=args.queue, kind="work")
        async def hang(job: awa.Job[Work]) -> None:
            try:  # a cancel may land while "started" is still being recorded
                await asyncio.to_thread(record, url, name, "started", job.id)
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                await asyncio.to_thread(
                    record, url, name, "cancelled", job.id, str(job.is_cancelled())
                )
                raise

    elif args.mode == "complete":

        @client.task(Work, queue=args.queue, kind="work")
        async def complete(job: awa.Job[Work]) -> None:
            await asyncio.to_thread(record, url, name, "started", job.id)
            await asyncio.to_thread(record, url, name, "completed", job.id, str(job.attempt))

    elif args.mode == "nap":

        @client.task(Work, queue=args.queue, kind="work")
        async def nap(job: awa.Job[Work]) -> None:
            await asyncio.sleep(args.nap)

    else:

        @client.task(Work, queue=args.queue, kind="work")
        def late(job: awa.SyncJob[Work]) -> None:
            record(url, name, "started", job.id)
            pause = threading.Event()
            for _ in range(int(RELEASE_WAIT_S / 0.05)):
                if released(url, job.id):
                    break
                pause.wait(0.05)
            record(url, name, "late_finish", job.id)

    if args.periodic:
        client.periodic("periodic", args.periodic, Work("tick"), kind="work", queue=args.queue)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    client.start(
        [(args.queue, args.concurrency)],
        dlq_enabled=args.dlq,
        heartbeat_interval=args.heartbeat_interval,
        heartbeat_staleness=args.staleness,
        poll_interval=0.1,
        runtime_config=awa.RuntimeConfig(
            maintenance_interval_s=args.maintenance_interval,
            run_maintenance=not args.no_maintenance,
        ),
    )
    runtime = client.runtime
    assert runtime is not None
    record(url, name, "ready", detail=json.dumps({"pid": os.getpid(), "owner": runtime.owner}))
    while not stop.wait(0.2):  # woken by SIGTERM's handler
        pass
    client.shutdown(timeout=5)  # drains handlers and flushes their outcomes
    record(url, name, "stats", detail=json.dumps(attrs.asdict(runtime.stats)))


if __name__ == "__main__":
    main()
