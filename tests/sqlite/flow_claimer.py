"""A claiming process for tests/sqlite/test_flow_processes.py, driven line by line.

``python tests/sqlite/flow_claimer.py DB_PATH QUEUE`` opens its own ``SqliteStore`` on the
file and answers each command on stdin with one line on stdout:

- ``claim N``: ``store.claim(QUEUE, limit=N)``; answers ``claimed ID ...`` (the ids it got,
  maybe none) and keeps those attempts running;
- ``finish``: completes every attempt it holds; answers ``finished K``;
- ``quit``: closes the store and exits.

A command is read from a pipe, so the test starts every process's claim at once and waits for
the answers: no sleeps on either side.
"""

from __future__ import annotations

import sys

from awa.adapters.sqlite import SqliteStore
from awa.domain import Complete, Job
from awa.ports import Finish


def main() -> None:
    path, queue = sys.argv[1], sys.argv[2]
    held: list[Job] = []
    with SqliteStore(path) as store:
        for line in sys.stdin:
            command, *rest = line.split()
            if command == "claim":
                jobs = store.claim(queue, limit=int(rest[0]))
                held.extend(jobs)
                answer = " ".join(["claimed", *(str(job.id) for job in jobs)])
            elif command == "finish":
                store.finish([Finish(job.lease, Complete()) for job in held])
                answer, held = f"finished {len(held)}", []
            elif command == "quit":
                return
            else:
                raise SystemExit(f"unknown command {line!r}")
            print(answer, flush=True)


if __name__ == "__main__":
    main()
