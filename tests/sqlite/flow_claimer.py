"""A claiming process for tests/sqlite/test_flow_processes.py and test_flow_keys_processes.py,
driven line by line.

``python tests/sqlite/flow_claimer.py DB_PATH QUEUE [--without-ordering-filter]`` opens its
own ``SqliteStore`` on the file and answers each command on stdin with one line on stdout:

- ``claim N``: ``store.claim(QUEUE, limit=N)``; answers ``claimed ID ...`` (the ids it got,
  maybe none) and keeps those attempts running;
- ``finish``: completes every attempt it holds; answers ``finished K``;
- ``quit``: closes the store and exits.

``--without-ordering-filter`` takes THE ORDERING FILTER out of this process's claim statements
(a planted bug: the test shows its probe catches what the filter prevents).

A command is read from a pipe, so the test starts every process's claim at once and waits for
the answers: no sleeps on either side.
"""

from __future__ import annotations

import sys
from importlib import resources

from awa.adapters.sqlite import SqliteStore, _sql
from awa.domain import Complete, Job
from awa.ports import Finish


def _without_ordering_filter() -> None:
    """Every statement the part ``ordering_free`` went into, with the part read as true."""
    text = (resources.files("awa.adapters.sqlite") / "sql" / "ordering_free.sqlpart").read_text()
    part = _sql._without_header(text)
    changed = [name for name, statement in _sql.SQL.items() if part in statement]
    if len(changed) != 4:  # the four claim_candidates statements
        raise SystemExit(f"the ordering filter is in {changed}, not in the four claim statements")
    for name in changed:
        _sql.SQL[name] = _sql.SQL[name].replace(part, "1")


def main() -> None:
    path, queue, *options = sys.argv[1:]
    if options == ["--without-ordering-filter"]:
        _without_ordering_filter()
    elif options:
        raise SystemExit(f"unknown options {options!r}")
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
