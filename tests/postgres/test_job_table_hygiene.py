"""The job table under a queue's churn: its storage settings reach a database that already
holds jobs, and the claim stays a range scan of its partial index however many finished jobs
the table keeps (docs/performance.md, "Scale with the backlog")."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from awa.adapters.postgres import PostgresStore, migrate
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.migrations import MIGRATIONS

HYGIENE = next(m for m in MIGRATIONS if m.name == "job_table_hygiene")

_ADD_JOBS = """
INSERT INTO awa.jobs (kind, queue, state, run_at, created_at, finalized_at)
SELECT 'chore', %(queue)s, %(state)s, now() - interval '1 hour', now() - interval '1 hour',
       CASE WHEN %(state)s = 'completed' THEN now() - interval '30 minutes' END
FROM generate_series(1, %(n)s)
"""


def _migrate_before_hygiene(conn: psycopg.Connection[Any]) -> None:
    """The schema as a release before the hygiene migration left it."""
    with conn.transaction():
        conn.execute(SQL["create_schema"])
        conn.execute(SQL["create_ledger"])
        for m in MIGRATIONS:
            if m.version < HYGIENE.version:
                conn.execute(m.sql.encode())
                params = {"version": m.version, "name": m.name, "checksum": m.checksum}
                conn.execute(SQL["record_migration"], params)


def _options(conn: psycopg.Connection[Any], table: str) -> dict[str, str]:
    row = conn.execute("SELECT reloptions FROM pg_class WHERE oid = %s::regclass", [table])
    found = row.fetchone()
    assert found is not None
    return dict(option.split("=", 1) for option in found[0] or [])


def test_the_hygiene_migration_applies_to_a_database_holding_jobs(empty_database: str) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        _migrate_before_hygiene(conn)
        conn.execute(_ADD_JOBS, {"queue": "chores", "state": "available", "n": 30})
        conn.execute(_ADD_JOBS, {"queue": "chores", "state": "completed", "n": 20})
        assert _options(conn, "awa.jobs") == {}
        applied = migrate(conn)
        assert applied[0] == HYGIENE.version
        # since migration 0010 the settings belong to the partition that churns
        options = _options(conn, "awa.jobs_hot")
        assert options["fillfactor"] == "80"
        assert options["autovacuum_vacuum_scale_factor"] == "0.01"
        assert options["autovacuum_vacuum_cost_limit"] == "2000"
    with PostgresStore(empty_database) as store:
        claimed = store.claim("chores", limit=100)
        assert len(claimed) == 30
        assert store.count_jobs() == 50


def _plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _plan_nodes(child)


@pytest.mark.parametrize("statement", ["claim", "claim_aged"])
def test_the_claim_is_a_range_scan_of_its_index_behind_many_finished_jobs(
    pg_clean_url: str, statement: str
) -> None:
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        conn.execute(_ADD_JOBS, {"queue": "chores", "state": "completed", "n": 20_000})
        conn.execute(_ADD_JOBS, {"queue": "chores", "state": "available", "n": 2_000})
        # a backlog elsewhere: with a few thousand live jobs a hash join over all of them is
        # as cheap as 50 lookups, and the planner rightly takes it
        conn.execute(_ADD_JOBS, {"queue": "other", "state": "available", "n": 18_000})
        conn.execute("ANALYZE awa.jobs")
        params = {
            "now": None,
            "queue": "chores",
            "limit": 50,
            "deadline": timedelta(minutes=30),
            "aging_us": 60_000_000,
        }
        cur = psycopg.ClientCursor(conn)
        cur.execute("EXPLAIN (VERBOSE, FORMAT JSON) " + SQL[statement], params)
        row = cur.fetchone()
        assert row is not None
        nodes = list(_plan_nodes(row[0][0]["Plan"]))
    scans = [n for n in nodes if n.get("Relation Name", "").startswith("jobs_")]
    # the finished jobs' partition is left out of the plan altogether
    assert {n["Relation Name"] for n in scans} == {"jobs_hot"}
    claim_scans = [n for n in scans if n.get("Index Name") == "jobs_hot_claim_idx"]
    assert claim_scans, "the claim does not read jobs_hot_claim_idx"
    assert {n["Node Type"] for n in claim_scans} <= {"Index Scan", "Index Only Scan"}
    # every other read of the table is a lookup of the picked ids by primary key
    assert {n.get("Index Name") for n in scans} <= {"jobs_hot_claim_idx", "jobs_hot_pkey"}
    assert "Seq Scan" not in {n["Node Type"] for n in nodes}
    # the index delivers (priority, run_at, id) order: nothing sorts the runnable jobs
    assert statement == "claim_aged" or "Sort" not in {n["Node Type"] for n in nodes}


def test_a_completion_reads_only_its_own_jobs_when_the_statistics_say_none_is_running(
    pg_clean_url: str,
) -> None:
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        conn.execute(_ADD_JOBS, {"queue": "chores", "state": "completed", "n": 20_000})
        conn.execute("ANALYZE awa.jobs")  # taken while nothing runs
        conn.execute(_ADD_JOBS, {"queue": "chores", "state": "available", "n": 5_000})
        conn.execute(
            "UPDATE awa.jobs SET state = 'running', attempt = 1, run_lease = 1,"
            " attempted_at = now(), heartbeat_at = now() WHERE state = 'available'"
        )
        ids = [
            row[0]
            for row in conn.execute(
                "SELECT id FROM awa.jobs WHERE state = 'running' ORDER BY id LIMIT 100"
            )
        ]
        params = {"now": None, "ids": ids, "leases": [1] * len(ids), "metadata": [None] * 100}
        with conn.transaction(force_rollback=True):
            cur = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + SQL["complete_many"], params)
            row = cur.fetchone()
        assert row is not None
        nodes = list(_plan_nodes(row[0][0]["Plan"]))
    assert nodes[0]["Node Type"] == "ModifyTable"
    assert nodes[0]["Actual Rows"] == len(ids)
    scans = [n for n in nodes if n.get("Relation Name", "").startswith("jobs_")]
    # the running jobs are all hot: the finished jobs' partition is not read
    assert {n["Relation Name"] for n in scans} == {"jobs_hot"}
    # each read of the table is bounded by the batch's ids, never the 5,000 running jobs
    assert all("Index Cond" in n for n in scans)
    assert max(n["Actual Rows"] * n["Actual Loops"] for n in scans) <= len(ids)
