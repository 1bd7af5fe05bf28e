"""The queue summary counts finished jobs without reading every one (migration 0011): each
(queue, state) group of awa.jobs_done is counted exactly up to a bound and estimated past it,
so the count's cost follows the work in progress, not the retention window."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.adapters.postgres import store as store_module
from awa.adapters.postgres._sql import SQL
from awa.domain import Complete, Fail, JobState, NewJob, Unique
from awa.ports import Finish


def _finished(url: str, queue: str, state: str, count: int, finalized_ago: str) -> None:
    """``count`` finished jobs written straight into awa.jobs (PostgreSQL routes them to
    jobs_done), finished ``finalized_ago`` before the database's now."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO awa.jobs (kind, queue, state, run_at, created_at, finalized_at, attempt)"
            " SELECT 'k', %s, %s, now(), now(), now() - %s::interval, 1"
            " FROM generate_series(1, %s)",
            [queue, state, finalized_ago, count],
        )


def _vacuum_analyze(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) awa.jobs_done")


def _run(store: PostgresStore, queue: str = "default") -> Any:
    store.insert([NewJob(kind="k", queue=queue)])
    [job] = store.claim(queue, limit=1)
    return job


@pytest.fixture
def exact_max(monkeypatch: pytest.MonkeyPatch) -> int:
    """A small bound, so that a test reaches it with a few jobs."""
    monkeypatch.setattr(store_module, "FINISHED_EXACT_MAX", 10)
    return 10


def test_small_groups_are_counted_exactly_with_the_finished_key_holders_in_both_partitions(
    pg_clean_url: str, clock: ManualClock
) -> None:
    with PostgresStore(pg_clean_url, clock=clock) as store:
        for _ in range(3):
            store.finish([Finish(_run(store).lease, Complete())])
        failed = _run(store)
        store.finish([Finish(failed.lease, Fail("no", terminal=True))])
        held = store.insert([NewJob(kind="k", unique=Unique())])[0]
        [running] = store.claim("default", limit=1)
        assert running.id == held.id
        store.finish([Finish(running.lease, Complete())])  # keeps its key: stays in jobs_hot
        store.insert([NewJob(kind="k"), NewJob(kind="k", queue="other")])
        _finished(pg_clean_url, "old", "cancelled", 4, "1 day")

        summary = store.summarize_queues(window_s=600)

    default, old, other = summary.queues
    assert default.counts[JobState.COMPLETED] == 4  # three in jobs_done, one in jobs_hot
    assert default.counts[JobState.FAILED] == 1
    assert default.counts[JobState.AVAILABLE] == 1
    assert old.counts[JobState.CANCELLED] == 4
    assert other.counts[JobState.AVAILABLE] == 1
    assert all(stats.estimated == frozenset() for stats in summary.queues)
    assert summary.ended["default"][JobState.COMPLETED] == 4
    assert summary.ended["default"][JobState.FAILED] == 1
    assert summary.ended["old"][JobState.CANCELLED] == 0  # a day ago: outside the window


def test_a_finished_group_past_the_bound_is_estimated_and_the_others_stay_exact(
    pg_clean_url: str, clock: ManualClock, exact_max: int
) -> None:
    _finished(pg_clean_url, "big", "completed", 400, "1 hour")
    _finished(pg_clean_url, "big", "failed", exact_max, "1 hour")  # at the bound: exact
    _vacuum_analyze(pg_clean_url)
    with PostgresStore(pg_clean_url, clock=clock) as store:
        [big] = store.summarize_queues().queues

    assert big.estimated == frozenset({JobState.COMPLETED})
    # the planner's estimate from fresh statistics of the whole partition
    assert 360 <= big.counts[JobState.COMPLETED] <= 440
    assert big.counts[JobState.FAILED] == exact_max


def test_an_estimate_follows_the_partition_as_it_grows_between_analyzes(
    pg_clean_url: str, clock: ManualClock, exact_max: int
) -> None:
    _finished(pg_clean_url, "big", "completed", 2_000, "1 hour")
    _vacuum_analyze(pg_clean_url)
    _finished(pg_clean_url, "big", "completed", 2_000, "1 hour")  # no ANALYZE since
    with PostgresStore(pg_clean_url, clock=clock) as store:
        [big] = store.summarize_queues().queues
    # statistics of 2,000 rows, scaled to the pages the partition has now
    assert 3_200 <= big.counts[JobState.COMPLETED] <= 4_800


def test_an_estimate_is_never_below_what_was_counted(
    pg_clean_url: str, clock: ManualClock, exact_max: int
) -> None:
    _vacuum_analyze(pg_clean_url)  # statistics of an empty partition: the planner guesses
    _finished(pg_clean_url, "big", "completed", 50, "1 hour")
    with PostgresStore(pg_clean_url, clock=clock) as store:
        [big] = store.summarize_queues().queues
    assert big.estimated == frozenset({JobState.COMPLETED})
    assert big.counts[JobState.COMPLETED] > exact_max


def test_the_count_reads_a_bounded_part_of_the_finished_jobs(pg_clean_url: str) -> None:
    """30,000 finished jobs, 600 of them within the window: the count reads at most the bound
    of each group, the window's jobs, and a step of the index per group, never all of them.

    Sequential scans are priced out, as ``summarize_queues`` prices them out for this statement,
    and parallel ones too, whose per-worker figures would blur the count of rows read. The
    count before migration 0011 read all 30,000 through any index."""
    for queue in ("a", "b"):
        _finished(pg_clean_url, queue, "completed", 14_700, "2 hours")
        _finished(pg_clean_url, queue, "completed", 300, "1 minute")
    _vacuum_analyze(pg_clean_url)
    bound = 1_000
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        conn.execute(SQL["session_settings"])  # as on every connection of the store
        conn.execute("SET enable_seqscan = off; SET max_parallel_workers_per_gather = 0")
        now = conn.execute("SELECT now()").fetchone()
        assert now is not None
        params = {"now": now[0], "since": now[0] - timedelta(minutes=5), "exact_max": bound}
        cur = psycopg.ClientCursor(conn)
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + SQL["count_finished_states"], params)
        row = cur.fetchone()
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    read = _rows_read(plan[0]["Plan"], "jobs_done")
    assert read <= 2 * (bound + 1) + 600 + 10, read  # of 30,000


def _rows_read(node: dict[str, Any], relation: str) -> int:
    """Rows that the plan's scans of ``relation`` returned, over all their loops."""
    read = 0
    if node.get("Relation Name") == relation:  # both figures are per loop
        loops = int(node["Actual Loops"])
        read += (int(node["Actual Rows"]) + int(node.get("Rows Removed by Filter", 0))) * loops
    for child in node.get("Plans", []):
        read += _rows_read(child, relation)
    return read


def test_the_dashboard_marks_an_estimated_count(
    pg_clean_url: str, clock: ManualClock, exact_max: int
) -> None:
    from awa.ui import create_app
    from tests.ui.conftest import browser_client

    _finished(pg_clean_url, "big", "completed", 400, "1 hour")
    _finished(pg_clean_url, "big", "failed", 3, "1 hour")
    _vacuum_analyze(pg_clean_url)
    with PostgresStore(pg_clean_url, clock=clock) as store:
        [big] = store.summarize_queues().queues
        page = browser_client(create_app(store)).get("/")
    assert page.status_code == 200
    mark = 'title="estimated: too many finished jobs to count each time">≈'
    assert f"{mark}{big.counts[JobState.COMPLETED]}</a>" in page.text
    assert 'state=failed">3</a>' in page.text  # counted: no mark


def test_the_finished_count_runs_with_sequential_scans_priced_out_for_its_transaction_only(
    pg_clean_url: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the window is a large share of the finished jobs the planner would read them all,
    a read that grows with the history; summarize_queues prices that out for this count, and
    only until its transaction ends."""
    # stands in for count_finished_states.sql: one group, "estimated" when the setting is off
    probe = (
        "SELECT 'q', 'completed', 1, NULL::timestamptz, 0,"
        " current_setting('enable_seqscan') = 'off' WHERE %(exact_max)s::int > 0"
    )
    monkeypatch.setitem(SQL, "count_finished_states", probe)
    with PostgresStore(pg_clean_url, clock=clock, pool_size=1) as store:
        [q] = store.summarize_queues().queues
        assert q.estimated == frozenset({JobState.COMPLETED})
        with store._connection("reading a setting") as conn:  # the pool's one connection
            assert conn.execute("SHOW enable_seqscan").fetchone() == ("on",)
