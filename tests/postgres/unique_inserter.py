"""A producer process for tests/postgres/test_scheduling_processes.py.

``python tests/postgres/unique_inserter.py URL COUNT`` opens a ``PostgresStore``, prints
``ready``, waits for a line on stdin (the test's starting gun, so that every producer inserts
at the same time), then inserts the same unique job ``COUNT`` times and prints one JSON line:
how many inserts went through and how many were refused with ``UniqueConflict``.
"""

from __future__ import annotations

import json
import sys

from awa.adapters.postgres import PostgresStore
from awa.domain import NewJob, Unique, UniqueConflict

JOB = NewJob(kind="report", args={"day": 7}, unique=Unique())


def main() -> None:
    url, count = sys.argv[1], int(sys.argv[2])
    with PostgresStore(url, pool_size=1) as store:
        store.list_jobs(limit=1)  # connected, schema checked: ready to race
        print("ready", flush=True)
        sys.stdin.readline()
        inserted = conflicts = 0
        for _ in range(count):
            try:
                store.insert([JOB])
                inserted += 1
            except UniqueConflict:
                conflicts += 1
    print(json.dumps({"inserted": inserted, "conflicts": conflicts}), flush=True)


if __name__ == "__main__":
    main()
