"""Failed and cancelled jobs have a retention of their own (migration 0012): each retention
is deleted through an index of its own states, so deleting the completed jobs past their day
never steps over the failed jobs kept for their week (nor the other way round), and the
upgrade keeps every queue's settings."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from awa.adapters.postgres import PostgresStore, migrate
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.migrations import MIGRATIONS
from awa.domain import JobState
from tests.pg_fixtures import migrate_before

FAILED_RETENTION = next(m for m in MIGRATIONS if m.name == "failed_retention")


def _finished(conn: psycopg.Connection[Any], state: str, count: int, ago: str) -> None:
    """``count`` jobs of ``state`` finished ``ago`` (PostgreSQL routes them to jobs_done)."""
    conn.execute(
        "INSERT INTO awa.jobs (kind, queue, state, run_at, created_at, finalized_at, attempt)"
        " SELECT 'k', 'default', %s, now(), now(), now() - %s::interval, 1"
        " FROM generate_series(1, %s)",
        [state, ago, count],
    )


def _read(node: dict[str, Any]) -> tuple[int, set[str]]:
    """Rows the plan's scans of awa.jobs_done returned over all their loops, and the indexes
    they read."""
    read, indexes = 0, set()
    if node.get("Relation Name") == "jobs_done":
        rows = int(node["Actual Rows"]) + int(node.get("Rows Removed by Filter", 0))
        read += rows * int(node["Actual Loops"])
        indexes.add(str(node.get("Index Name")))
    for child in node.get("Plans", []):
        more, names = _read(child)
        read, indexes = read + more, indexes | names
    return read, indexes


def _explain_delete(url: str, statement: str, older_than: timedelta) -> tuple[int, set[str]]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) awa.jobs_done")
        conn.execute(SQL["session_settings"])  # as on every connection of the store
        conn.execute("SET max_parallel_workers_per_gather = 0")
        params = {"now": None, "older_than": older_than, "limit": 1000}
        with conn.transaction(force_rollback=True):
            cur = psycopg.ClientCursor(conn)
            cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + SQL[statement], params)
            row = cur.fetchone()
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return _read(plan[0]["Plan"])


@pytest.mark.parametrize(
    ("statement", "expired", "kept", "older_than"),
    [
        # completed jobs past their day, behind a week of failures kept
        ("delete_completed", ("completed", 200, "2 days"), ("failed", 10_000, "2 days"), 1),
        # failures past an hour (a queue's own), behind a day of completed jobs kept
        ("delete_failed", ("cancelled", 200, "2 hours"), ("completed", 10_000, "2 hours"), 1 / 24),
    ],
)
def test_a_retentions_delete_reads_only_its_own_states(
    pg_clean_url: str,
    statement: str,
    expired: tuple[str, int, str],
    kept: tuple[str, int, str],
    older_than: float,
) -> None:
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        _finished(conn, *kept)
        _finished(conn, *expired)
    read, indexes = _explain_delete(pg_clean_url, statement, timedelta(days=older_than))
    assert f"jobs_done_{statement.removeprefix('delete_')}_idx" in indexes
    # each expired job is read twice, found in the index then deleted by id (jobs_done_pkey);
    # of the 10,000 jobs kept, none
    assert read <= 2 * expired[1] + 10, read


def test_the_upgrade_keeps_every_queues_settings_and_gives_none_a_failed_retention(
    empty_database: str,
) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        migrate_before(conn, FAILED_RETENTION.version)
        conn.execute(
            "INSERT INTO awa.queues (queue, dlq_enabled, finished_retention, dlq_retention)"
            " VALUES ('default', false, '1 hour', '2 days')"
        )
        for state in ("completed", "failed", "cancelled"):
            _finished(conn, state, 3, "3 hours")
        assert migrate(conn)[0] == FAILED_RETENTION.version  # then any later ones
        indexes = {
            name
            for (name,) in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = 'awa'"
            ).fetchall()
        }
    assert {"jobs_done_completed_idx", "jobs_done_failed_idx", "jobs_completed_idx"} <= indexes
    assert not {name for name in indexes if name.endswith("finished_idx")}
    with PostgresStore(empty_database) as store:
        [stats] = store.queue_stats()
        assert (stats.finished_retention_s, stats.failed_retention_s, stats.dlq_retention_s) == (
            3600.0,
            None,
            2 * 86400.0,
        )
        # the queue's hour now keeps completed jobs only; the failures wait for their own
        assert store.delete_finished(older_than_s=86400, failed_older_than_s=7 * 86400) == 3
        assert store.count_jobs(state=JobState.COMPLETED) == 0
        assert store.count_jobs() == 6
        store.configure_queue("default", failed_retention_s=60)
        assert store.delete_finished(older_than_s=86400, failed_older_than_s=7 * 86400) == 6
