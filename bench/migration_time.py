"""How long an upgrade holds awa.jobs locked: migration 0010 (finished jobs apart) by default.

    python bench/migration_time.py [--jobs 1000000] [--live-share 0.05] [--migration NAME]

Creates a database (``$PEERBENCH_DSN/awa_migration_time``, dropped first) at the schema before
``--migration``, fills it with ``--jobs`` jobs of small args (``--live-share`` of them
available, the rest completed), and times that one migration: 0010 copies awa.jobs into the
partitioned table under an ACCESS EXCLUSIVE lock (inserts and workers wait), 0011
(``finished_counts``) builds an index of awa.jobs_done under a SHARE lock (finishing jobs wait),
0012 (``failed_retention``) two, one per retention, and drops jobs_finished_idx.
"""

from __future__ import annotations

import argparse
import os
import time

import psycopg

from awa.adapters.postgres import migrations

BASE_DSN = os.environ.get("PEERBENCH_DSN", "postgresql://postgres@127.0.0.1:55432")
DATABASE = "awa_migration_time"

_FILL = """
INSERT INTO awa.jobs (kind, queue, args, state, run_at, created_at, finalized_at, attempt)
SELECT 'send_email', 'default', jsonb_build_object('to', 'user' || g || '@example.com', 'n', g),
       %(state)s, now(), now(), CASE WHEN %(state)s = 'completed' THEN now() END,
       CASE WHEN %(state)s = 'completed' THEN 1 ELSE 0 END
FROM generate_series(1, %(n)s) AS g
"""

# the table with its indexes, its partitions' since 0010
_SIZE = "SELECT sum(pg_total_relation_size(relid))::bigint FROM pg_partition_tree('awa.jobs')"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--live-share", type=float, default=0.05)
    p.add_argument("--migration", default="finished_jobs_apart", help="the one to time")
    a = p.parse_args()
    [timed] = [m for m in migrations.MIGRATIONS if m.name == a.migration]
    with psycopg.connect(f"{BASE_DSN}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    everything = migrations.MIGRATIONS
    with psycopg.connect(f"{BASE_DSN}/{DATABASE}", autocommit=True) as conn:
        migrations.MIGRATIONS = [m for m in everything if m.version < timed.version]
        try:
            migrations.migrate(conn)
        finally:
            migrations.MIGRATIONS = everything
        live = round(a.jobs * a.live_share)
        conn.execute(_FILL, {"state": "completed", "n": a.jobs - live})
        conn.execute(_FILL, {"state": "available", "n": live})
        conn.execute("VACUUM ANALYZE awa.jobs")
        row = conn.execute(_SIZE).fetchone()
        size_mib = (row[0] if row else 0) / (1 << 20)
        migrations.MIGRATIONS = [m for m in everything if m.version <= timed.version]
        try:
            started = time.perf_counter()
            applied = migrations.migrate(conn)
            took = time.perf_counter() - started
        finally:
            migrations.MIGRATIONS = everything
    print(
        f"{a.jobs:,} jobs ({size_mib:,.0f} MiB with indexes, {live:,} available):"
        f" migrations {applied} took {took:.1f} s, {a.jobs / took:,.0f} jobs/s"
    )


if __name__ == "__main__":
    main()
