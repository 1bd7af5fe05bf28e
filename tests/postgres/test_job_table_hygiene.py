"""The job table under a queue's churn: its storage settings reach a database that already
holds jobs, and the claim stays a range scan of its partial index however many finished jobs
the table keeps (docs/performance.md, "Scale with the backlog")."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from awa.adapters.postgres import PostgresStore, migrate
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.migrations import MIGRATIONS
from tests.pg_fixtures import migrate_before

HYGIENE = next(m for m in MIGRATIONS if m.name == "job_table_hygiene")

_ADD_JOBS = """
INSERT INTO awa.jobs (kind, queue, state, run_at, created_at, finalized_at)
SELECT 'chore', %(queue)s, %(state)s, now() - interval '1 hour', now() - interval '1 hour',
       CASE WHEN %(state)s = 'completed' THEN now() - interval '30 minutes' END
FROM generate_series(1, %(n)s)
"""


def _options(conn: psycopg.Connection[Any], table: str) -> dict[str, str]:
    row = conn.execute("SELECT reloptions FROM pg_class WHERE oid = %s::regclass", [table])
    found = row.fetchone()
    assert found is not None
    return dict(option.split("=", 1) for option in found[0] or [])


def test_the_hygiene_migration_applies_to_a_database_holding_jobs(empty_database: str) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        migrate_before(conn, HYGIENE.version)
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


def _reads_jobs(node: dict[str, Any]) -> bool:
    """Whether a plan node scans a partition of awa.jobs."""
    return "Scan" in node["Node Type"] and node.get("Relation Name", "").startswith("jobs_")


def _plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _plan_nodes(child)


def _ordering_lookups(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The nodes of the ordering filter's subplans (ordering_free.sqlpart): lookups run only
    for a candidate with an ordering_key, none of which these queues hold."""
    for child in node.get("Plans", []):
        if child.get("Parent Relationship") == "SubPlan":
            yield from _plan_nodes(child)
        else:
            yield from _ordering_lookups(child)


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
        lookups = list(_ordering_lookups(row[0][0]["Plan"]))
    # the ordering filter's lookups are index descents of the hot partition (the subplans
    # run only for an ordered candidate: tests/postgres/test_flow_keys.py measures them)
    assert lookups, "the claim has no ordering filter"
    assert {n["Node Type"] for n in lookups if _reads_jobs(n)} <= {"Index Scan", "Index Only Scan"}
    assert {n["Relation Name"] for n in lookups if _reads_jobs(n)} == {"jobs_hot"}
    nodes = [n for n in nodes if all(n is not lookup for lookup in lookups)]
    scans = [n for n in nodes if _reads_jobs(n)]
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
    scans = [n for n in nodes if _reads_jobs(n)]
    # the running jobs are all hot: the finished jobs' partition is not read
    assert {n["Relation Name"] for n in scans} == {"jobs_hot"}
    # each read of the table is bounded by the batch's ids, never the 5,000 running jobs
    assert all("Index Cond" in n for n in scans)
    assert max(n["Actual Rows"] * n["Actual Loops"] for n in scans) <= len(ids)


_ADD_RUNNING = """
INSERT INTO awa.jobs (kind, queue, state, attempt, run_lease, run_at, created_at, attempted_at,
                      heartbeat_at)
SELECT 'chore', 'chores', 'running', 1, 1, now(), now(), now(), now()
FROM generate_series(1, %(n)s)
"""


@pytest.mark.parametrize("statement", ["claim", "claim_aged"])
def test_a_claim_reads_only_what_it_takes_when_the_statistics_say_the_queue_is_empty(
    pg_clean_url: str, statement: str
) -> None:
    """The statistics of the hot partition are often taken while the worker keeps up, every
    job running and none waiting; when a backlog builds before the next ANALYZE, the planner
    believes a claim matches one row. A claim must then still read its `limit` rows from the
    claim index and find them again by id, not read every queued job (in the soak: a bitmap
    scan and sort of 88,800 jobs, then a join that compared 8.9 million pairs, 1.4 s a claim)."""
    limit = 50
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        conn.execute(SQL["session_settings"])  # as on every connection of the store
        conn.execute(_ADD_RUNNING, {"n": 20_000})
        conn.execute("ANALYZE awa.jobs_hot")  # taken while nothing waits
        conn.execute("DELETE FROM awa.jobs")
        conn.execute(_ADD_JOBS, {"queue": "chores", "state": "available", "n": 20_000})
        params = {
            "now": None,
            "queue": "chores",
            "limit": limit,
            "deadline": timedelta(minutes=30),
            "aging_us": 60_000_000,
        }
        cur = psycopg.ClientCursor(conn)
        with conn.transaction(force_rollback=True):
            cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + SQL[statement], params)
            row = cur.fetchone()
        assert row is not None
        nodes = list(_plan_nodes(row[0][0]["Plan"]))
    assert nodes[0]["Actual Rows"] == limit
    assert not [n["Node Type"] for n in nodes if "Bitmap" in n["Node Type"]]
    scans = [n for n in nodes if _reads_jobs(n)]
    assert {n["Relation Name"] for n in scans} == {"jobs_hot"}
    # at most `limit` per priority from the claim index, then one lookup per job by id
    assert max(n["Actual Rows"] * n["Actual Loops"] for n in scans) <= 4 * limit
    by_id = [n for n in scans if n.get("Index Name") == "jobs_hot_pkey"]
    assert by_id
    assert all(n["Actual Loops"] == limit for n in by_id)


@pytest.mark.parametrize("owned", [True, False], ids=["own-pool", "pool-passed-in"])
def test_the_store_sets_its_planner_settings_on_every_connection(
    pg_clean_url: str, owned: bool
) -> None:
    pool: ConnectionPool[Any] = ConnectionPool(
        pg_clean_url, min_size=1, max_size=1, kwargs={"autocommit": True}, open=True
    )
    try:
        with PostgresStore(pg_clean_url if owned else pool, pool_size=1) as store:
            store.count_jobs()
            with store.pool.connection() as conn:
                settings = {
                    name: conn.execute(f"SHOW {name}").fetchone()
                    for name in ("jit", "enable_bitmapscan")
                }
    finally:
        pool.close()
    assert settings == {"jit": ("off",), "enable_bitmapscan": ("off",)}
