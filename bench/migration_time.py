"""How long the upgrade to migration 0010 (finished jobs apart) holds awa.jobs locked.

    python bench/migration_time.py [--jobs 1000000] [--live-share 0.05]

Creates a database (``$PEERBENCH_DSN/awa_migration_time``, dropped first) at the schema before
0010, fills it with ``--jobs`` jobs of small args (``--live-share`` of them available, the rest
completed), and times ``migrate`` from there: the copy into the partitioned table runs under
an ACCESS EXCLUSIVE lock, so this is how long inserts and workers wait during the upgrade.
"""

from __future__ import annotations

import argparse
import os
import time

import psycopg

from awa.adapters.postgres import migrations

BASE_DSN = os.environ.get("PEERBENCH_DSN", "postgresql://postgres@127.0.0.1:55432")
DATABASE = "awa_migration_time"
APART = next(m for m in migrations.MIGRATIONS if m.name == "finished_jobs_apart")

_FILL = """
INSERT INTO awa.jobs (kind, queue, args, state, run_at, created_at, finalized_at, attempt)
SELECT 'send_email', 'default', jsonb_build_object('to', 'user' || g || '@example.com', 'n', g),
       %(state)s, now(), now(), CASE WHEN %(state)s = 'completed' THEN now() END,
       CASE WHEN %(state)s = 'completed' THEN 1 ELSE 0 END
FROM generate_series(1, %(n)s) AS g
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--live-share", type=float, default=0.05)
    a = p.parse_args()
    with psycopg.connect(f"{BASE_DSN}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    everything = migrations.MIGRATIONS
    with psycopg.connect(f"{BASE_DSN}/{DATABASE}", autocommit=True) as conn:
        migrations.MIGRATIONS = [m for m in everything if m.version < APART.version]
        try:
            migrations.migrate(conn)
        finally:
            migrations.MIGRATIONS = everything
        live = round(a.jobs * a.live_share)
        conn.execute(_FILL, {"state": "completed", "n": a.jobs - live})
        conn.execute(_FILL, {"state": "available", "n": live})
        conn.execute("VACUUM ANALYZE awa.jobs")
        row = conn.execute("SELECT pg_total_relation_size('awa.jobs')").fetchone()
        size_mib = (row[0] if row else 0) / (1 << 20)
        started = time.perf_counter()
        applied = migrations.migrate(conn)
        took = time.perf_counter() - started
    print(
        f"{a.jobs:,} jobs ({size_mib:,.0f} MiB with indexes, {live:,} available):"
        f" migrations {applied} took {took:.1f} s, {a.jobs / took:,.0f} jobs/s"
    )


if __name__ == "__main__":
    main()
