"""What a listing page of the dashboard costs when the jobs carry large args: server time per
view of ``/jobs`` and ``/dlq``, and the process's memory, on SQLite or PostgreSQL.

    python bench/ui_listing_bench.py sqlite:///tmp/listing.db [--jobs 200] [--args-bytes 1000000]
    python bench/ui_listing_bench.py postgresql://user@host:port/dbname [--views 4]

The store is migrated and emptied (do not point this at jobs you want to keep), then given
``--jobs`` jobs whose args are one string of ``--args-bytes`` characters, as many again
dead-lettered (each failed once with a 2,000-character error). Each page is then viewed
``--views`` times through the app in process (Starlette's test client), listing 200 jobs
(``/jobs?limit=200``) and the dead-letter page's 100 entries. Printed: the time of each view,
and the resident memory (``VmRSS``) and its peak (``VmHWM``) before the first view and after
the last, read from ``/proc/self/status``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

from awa.cli.connect import open_store
from awa.domain import Fail, NewJob
from awa.ports import Finish


def memory_mb() -> tuple[float, float]:
    """Resident memory now and its peak so far, in MB."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return tuple(int(fields[name].split()[0]) / 1024 for name in ("VmRSS", "VmHWM"))  # type: ignore[return-value]


def empty(url: str) -> None:
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///").split("?")[0])
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        return
    import psycopg

    from awa.adapters.postgres import migrate

    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        conn.execute(
            "TRUNCATE awa.jobs, awa.dlq, awa.queues, awa.leader, awa.queue_summary RESTART IDENTITY"
        )


def fill(store: object, jobs: int, args_bytes: int) -> None:
    payload = {"blob": "x" * args_bytes}
    store.set_dlq_enabled("dead", True)  # type: ignore[attr-defined]
    for _ in range(jobs):
        store.insert([NewJob(kind="big", queue="media", args=payload)])  # type: ignore[attr-defined]
        store.insert([NewJob(kind="big", queue="dead", args=payload, max_attempts=1)])  # type: ignore[attr-defined]
        [claimed] = store.claim("dead", limit=1)  # type: ignore[attr-defined]
        failure = Fail("ValueError: " + "e" * 2000, terminal=True)
        store.finish([Finish(claimed.lease, failure)])  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--args-bytes", type=int, default=1_000_000)
    parser.add_argument("--views", type=int, default=4)
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    from awa.ui import create_app

    empty(args.url)
    with open_store(args.url, pool_size=2, migrating=True) as store:
        if hasattr(store, "migrate"):
            store.migrate()
        started = time.perf_counter()
        fill(store, args.jobs, args.args_bytes)
        print(f"filled {args.jobs} jobs and {args.jobs} dead letters of {args.args_bytes:,} bytes"
              f" of args in {time.perf_counter() - started:.1f} s")  # fmt: skip
        client = TestClient(create_app(store), base_url="http://127.0.0.1", client=("127.0.0.1", 1))
        rss, peak = memory_mb()
        print(f"before the first view: RSS {rss:.0f} MB, peak {peak:.0f} MB")
        for path in ("/jobs?limit=200", "/dlq"):
            for view in range(1, args.views + 1):
                started = time.perf_counter()
                answer = client.get(path)
                elapsed = time.perf_counter() - started
                assert answer.status_code == 200, (path, answer.status_code)
                rss, peak = memory_mb()
                print(f"GET {path} view {view}: {elapsed * 1000:.0f} ms;"
                      f" RSS {rss:.0f} MB, peak {peak:.0f} MB")  # fmt: skip


if __name__ == "__main__":
    main()
