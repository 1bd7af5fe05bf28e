"""A real worker process for the poison-job runbook test.

``python tests/cli/poison_worker.py URL QUEUE MODE``: works ``QUEUE`` with an ``awa.Client``
whose ``transcode`` handler either kills its own process (``MODE=poison``: SIGKILL, as an OOM
kill or a segfaulting native extension would) or succeeds (``MODE=fixed``). It stops cleanly
when its stdin closes. Maintenance is the test's job (``store.rescue``), so this process does
not run it.
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass

import awa

HEARTBEAT_INTERVAL_S = 0.5
HEARTBEAT_STALENESS_S = 2.0


@dataclass
class Transcode:
    video: str


def main(url: str, queue: str, mode: str) -> None:
    client = awa.Client(url)

    @client.task(Transcode, queue=queue, kind="transcode")
    def transcode(job: awa.SyncJob[Transcode]) -> None:
        if mode == "poison":
            os.kill(os.getpid(), signal.SIGKILL)
        print(f"transcoded {job.args.video} on attempt {job.attempt}", flush=True)

    client.start(
        [(queue, 2)],
        dlq_enabled=True,
        heartbeat_interval=HEARTBEAT_INTERVAL_S,
        heartbeat_staleness=HEARTBEAT_STALENESS_S,
        poll_interval=0.1,
        runtime_config=awa.RuntimeConfig(run_maintenance=False),
    )
    print("ready", flush=True)
    sys.stdin.read()  # until the test closes our stdin
    client.shutdown(timeout=5)


if __name__ == "__main__":
    main(*sys.argv[1:4])
