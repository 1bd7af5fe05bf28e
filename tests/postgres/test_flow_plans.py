"""The limited claim's statements stay index scans behind a large queue (issue 28: "claim cost
with limits stays an index scan"): the count reads the queue's live attempts only, through
jobs_live_queue_idx, not every queue's; the candidates are the claim index's range scan, as
claim.sql's; the granted ids are found by primary key. Plans are read with EXPLAIN ANALYZE
inside a transaction rolled back, so the rows each scan read are counted, not estimated."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest

from awa.adapters.postgres._sql import SQL

QUEUED = 100_000
RUNNING_HERE = 300
RUNNING_ELSEWHERE = 20_000
LIMIT = 50

_ADD_JOBS = """
INSERT INTO awa.jobs (kind, queue, state, attempt, run_lease, run_at, created_at, attempted_at,
                      heartbeat_at)
SELECT 'chore', %(queue)s, %(state)s, %(attempt)s, %(attempt)s, now() - interval '1 hour',
       now() - interval '1 hour',
       CASE WHEN %(attempt)s > 0 THEN now() END, CASE WHEN %(attempt)s > 0 THEN now() END
FROM generate_series(1, %(n)s)
"""


def _plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _plan_nodes(child)


def _scans_of_jobs(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        n
        for n in nodes
        if "Scan" in n["Node Type"] and n.get("Relation Name", "").startswith("jobs_")
    ]


@pytest.fixture(scope="module")
def big_queue(pg_url: str) -> Iterator[str]:
    """A queue of 100,000 runnable jobs with 300 running, beside 20,000 running elsewhere,
    analyzed; emptied again after the module's tests."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("TRUNCATE awa.jobs, awa.queues")
        add = [
            ("api", "available", 0, QUEUED),
            ("api", "running", 1, RUNNING_HERE),
            ("other", "running", 1, RUNNING_ELSEWHERE),
        ]
        for queue, state, attempt, n in add:
            conn.execute(_ADD_JOBS, {"queue": queue, "state": state, "attempt": attempt, "n": n})
        conn.execute(
            "INSERT INTO awa.queues (queue, concurrency_limit, rate_per_second, rate_burst)"
            " VALUES ('api', 1000, 500, 1000)"
        )
        conn.execute("ANALYZE awa.jobs_hot")
        conn.execute("ANALYZE awa.queues")
    yield pg_url
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("TRUNCATE awa.jobs, awa.queues")


_TYPES = {
    "now": "timestamptz",
    "queue": "text",
    "limit": "int",
    "aging_us": "bigint",
    "deadline": "interval",
}


def _explain(conn: psycopg.Connection[Any], statement: str, params: dict[str, Any]) -> list[Any]:
    """The plan as run, with the values in the plan (a custom plan)."""
    cur = psycopg.ClientCursor(conn)
    row = cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + SQL[statement], params).fetchone()
    assert row is not None
    return list(_plan_nodes(row[0][0]["Plan"]))


def _explain_generic(
    conn: psycopg.Connection[Any], statement: str, params: dict[str, Any]
) -> list[Any]:
    """The plan PostgreSQL makes once for every value (a generic plan), as it may for a
    statement psycopg prepared: the statement prepared with `$n` for each parameter."""
    names = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", SQL[statement])))
    text = SQL[statement]
    for n, name in enumerate(names, 1):
        text = text.replace(f"%({name})s", f"${n}")
    types = ", ".join(_TYPES[name] for name in names)
    conn.execute(f"PREPARE flow_plan ({types}) AS {text}")
    conn.execute("SET plan_cache_mode = force_generic_plan")
    values = ", ".join(["%s"] * len(names))
    cur = psycopg.ClientCursor(conn)
    query = f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE flow_plan ({values})"
    row = cur.execute(query, [params[name] for name in names]).fetchone()
    conn.execute("DEALLOCATE flow_plan")  # a caller may explain another statement next
    assert row is not None
    return list(_plan_nodes(row[0][0]["Plan"]))


def _params(**extra: Any) -> dict[str, Any]:
    return {"now": None, "queue": "api", "limit": LIMIT, "aging_us": 60_000_000, **extra}


@pytest.mark.parametrize("plans", ["custom", "generic"])
@pytest.mark.parametrize(
    "statement", ["count_live_attempts", "flow_candidates", "flow_candidates_aged"]
)
def test_the_limited_claim_reads_the_queues_live_attempts_and_its_limit_of_candidates(
    big_queue: str, statement: str, plans: str
) -> None:
    """Both plans: psycopg prepares a statement run often, and PostgreSQL may then plan it
    once for any queue, where the index's `queue IS NOT NULL` must follow from `queue = $1`."""
    with psycopg.connect(big_queue) as conn:
        conn.execute(SQL["session_settings"])  # as on every connection of the store
        explain = _explain if plans == "custom" else _explain_generic
        nodes = explain(conn, statement, _params())
        conn.rollback()
    scans = _scans_of_jobs(nodes)
    assert "Seq Scan" not in {n["Node Type"] for n in nodes}
    assert not [n for n in nodes if "Bitmap" in n["Node Type"]]
    assert {n["Relation Name"] for n in scans} == {"jobs_hot"}  # finished jobs: not read
    counts = [n for n in scans if n.get("Index Name") == "jobs_hot_live_queue_idx"]
    [count] = counts
    # this queue's live attempts, not the 20,000 of the other queue
    assert count["Actual Rows"] * count["Actual Loops"] == RUNNING_HERE
    if statement != "count_live_attempts":
        picks = [n for n in scans if n.get("Index Name") == "jobs_hot_claim_idx"]
        assert picks
        # at most `limit` per priority from the claim index, whatever the backlog
        assert sum(n["Actual Rows"] * n["Actual Loops"] for n in picks) <= 4 * LIMIT
        # the ordering filter's lookups (0014) are in the plan but never run: no job here
        # has an ordering key
        assert {n.get("Index Name") for n in scans if n["Actual Loops"]} == {
            "jobs_hot_live_queue_idx",
            "jobs_hot_claim_idx",
        }


def test_the_granted_ids_are_claimed_by_primary_key(big_queue: str) -> None:
    with psycopg.connect(big_queue) as conn:
        conn.execute(SQL["session_settings"])
        ids = [
            row[0]
            for row in conn.execute(
                "SELECT id FROM awa.jobs WHERE queue = 'api' AND state = 'available'"
                " ORDER BY id LIMIT %s FOR UPDATE",
                [LIMIT],
            )
        ]
        params = {
            "now": datetime.now(timezone.utc),
            "ids": ids,
            "deadline": timedelta(minutes=30),
            "queue": "api",
            "tokens": 10.0,
            "bucket_at": datetime.now(timezone.utc),
            "key_names": [],
            "key_tokens": [],
            "key_ats": [],
            "turn_given": False,
            "turn_cursor": None,
        }
        nodes = _explain(conn, "claim_granted", params)
        conn.rollback()
    assert nodes[0]["Node Type"] == "ModifyTable"
    assert nodes[0]["Actual Rows"] == LIMIT
    scans = _scans_of_jobs(nodes)
    assert {n.get("Index Name") for n in scans} == {"jobs_hot_pkey"}
    assert sum(n["Actual Rows"] * n["Actual Loops"] for n in scans) == LIMIT
    assert "Seq Scan" not in {n["Node Type"] for n in nodes if n.get("Relation Name") != "queues"}
