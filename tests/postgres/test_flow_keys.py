"""Flow keys on PostgreSQL (migration 0014): the tables refuse what the domain refuses, both
keys survive every insert route and every home a job moves through, two claimers racing on
their own connections never start two jobs of one ordering key nor overrun a key's limit, and
the keyed window and the ordering filter stay index scans behind 100,000 queued jobs."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from awa.adapters.postgres import PostgresStore
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.inserts.copy_encoding import COPY_CHUNK_JOBS
from awa.adapters.postgres.inserts.on_caller_connection import insert_on
from awa.domain import Complete, Fail, Job, JobState, NewJob, Schedule, Unique
from awa.domain.flow import (
    FLOW_KEY_LENGTH_MAX,
)
from awa.ports import Finish
from tests.postgres.test_flow_plans import _explain, _explain_generic

LONGEST = "k" * FLOW_KEY_LENGTH_MAX
#: keys COPY's text format must escape, and one at the length bound
AWKWARD = ["tab\there", "back\\slash", "new\nline", "ünï", "\\N", LONGEST]


# -- the tables' CHECKs ---------------------------------------------------------------------


_INSERT_JOB = """
INSERT INTO awa.jobs (kind, queue, state, run_at, created_at, concurrency_key, ordering_key)
VALUES ('k', 'q', 'available', now(), now(), %(concurrency)s, %(ordering)s)
"""
_INSERT_SCHEDULE = """
INSERT INTO awa.schedules (name, cron, timezone, missed_fire_policy, kind, queue, priority,
                           max_attempts, next_fire_at, created_at, updated_at, concurrency_key,
                           ordering_key)
VALUES ('s', '* * * * *', 'UTC', 'coalesce', 'k', 'q', 2, 3, now(), now(), now(),
        %(concurrency)s, %(ordering)s)
"""
_INSERT_DEAD = """
INSERT INTO awa.dlq (id, kind, queue, state, run_at, created_at, finalized_at, dlq_reason,
                     dlq_at, concurrency_key, ordering_key)
VALUES (1, 'k', 'q', 'failed', now(), now(), now(), 'r', now(), %(concurrency)s, %(ordering)s)
"""
_ROWS = {"jobs": _INSERT_JOB, "schedules": _INSERT_SCHEDULE, "dlq": _INSERT_DEAD}


@pytest.mark.parametrize("table", list(_ROWS))
@pytest.mark.parametrize("key", [None, "k", LONGEST])
def test_every_home_of_a_job_takes_the_keys_the_domain_takes(
    pg_clean_url: str, table: str, key: str | None
) -> None:
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        conn.execute(_ROWS[table], {"concurrency": key, "ordering": key})


@pytest.mark.parametrize("table", list(_ROWS))
@pytest.mark.parametrize("column", ["concurrency", "ordering"])
@pytest.mark.parametrize("key", ["", LONGEST + "k"])
def test_every_home_of_a_job_refuses_the_keys_the_domain_refuses(
    pg_clean_url: str, table: str, column: str, key: str
) -> None:
    params: dict[str, str | None] = {"concurrency": None, "ordering": None, column: key}
    with (
        psycopg.connect(pg_clean_url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.CheckViolation) as refused,
    ):
        conn.execute(_ROWS[table], params)
    assert refused.value.diag.constraint_name == f"{table}_{column}_key_length"


# the key limits' CHECKs: tests/postgres/test_flow_limits.py, beside the queue limits' own


def test_a_turn_cursor_is_a_key_taken_and_a_key_bucket_never_below_empty(
    pg_clean_url: str,
) -> None:
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        conn.execute("INSERT INTO awa.queues (queue) VALUES ('edge')")
        conn.execute("UPDATE awa.queues SET turn_cursor = NULL, turn_taken = true")
        conn.execute("UPDATE awa.queues SET turn_cursor = %s", [LONGEST])
        bad = [
            (
                "UPDATE awa.queues SET turn_cursor = 'a', turn_taken = false",
                "queues_turn_cursor_taken",
            ),
            ("UPDATE awa.queues SET turn_cursor = ''", "queues_turn_cursor_length"),
            (
                "INSERT INTO awa.flow_key_buckets VALUES ('edge', 'a', -0.5, now())",
                "flow_key_buckets_tokens_range",
            ),
            (
                "INSERT INTO awa.flow_key_buckets VALUES ('edge', '', 1, now())",
                "flow_key_buckets_key_length",
            ),
        ]
        for statement, constraint in bad:
            with pytest.raises(psycopg.errors.CheckViolation) as refused:
                conn.execute(statement)
            assert refused.value.diag.constraint_name == constraint


# -- the keys through every route -----------------------------------------------------------


def _requests(count: int, **extra: Any) -> list[NewJob]:
    """Jobs whose keys vary from one to the next (None among them): every run of one shape
    the COPY text shares is one job long."""
    keys: list[str | None] = [*AWKWARD, None]
    return [
        NewJob(
            kind="k",
            queue="routes",
            args={"n": n},
            concurrency_key=keys[n % len(keys)],
            ordering_key=keys[(n + 1) % len(keys)],
            **extra,
        )
        for n in range(count)
    ]


def _keys(jobs: list[Job] | list[NewJob]) -> list[tuple[str | None, str | None]]:
    return [(job.concurrency_key, job.ordering_key) for job in jobs]


def _stored_keys(store: PostgresStore, jobs: list[Job]) -> list[tuple[str | None, str | None]]:
    return _keys([store.get_job(job.id) for job in jobs])


def test_both_keys_survive_the_single_insert(store: PostgresStore) -> None:
    for request in _requests(len(AWKWARD) + 1):
        [job] = store.insert([request])
        assert _keys([job]) == _keys([request]) == _stored_keys(store, [job])


@pytest.mark.parametrize("count", [2, COPY_CHUNK_JOBS, COPY_CHUNK_JOBS + 50])
def test_both_keys_survive_copy_made_whole_and_streamed(store: PostgresStore, count: int) -> None:
    requests = _requests(count)
    inserted = store.insert(requests)
    assert _keys(inserted) == _keys(requests) == _stored_keys(store, inserted)
    streamed = store.insert_batch(count, iter([requests]), unique=False)
    jobs = [job for job in streamed if isinstance(job, Job)]
    assert _keys(jobs) == _keys(requests) == _stored_keys(store, jobs)
    ids = store.insert_batch(count, iter([requests]), unique=False, ids=True)
    assert _keys([store.get_job(job_id) for job_id in ids if isinstance(job_id, int)]) == _keys(
        requests
    )


def test_both_keys_survive_the_unique_insert_and_its_holder(store: PostgresStore) -> None:
    requests = [
        NewJob(
            kind="k",
            queue="routes",
            args={"n": n},
            concurrency_key=key,
            ordering_key=key,
            unique=Unique(),
        )
        for n, key in enumerate(AWKWARD)
    ]
    inserted = store.insert(requests)
    assert _keys(inserted) == _keys(requests) == _stored_keys(store, inserted)
    held = store.insert(requests, on_conflict="skip")  # each answered by its holder
    assert _keys(held) == _keys(requests)


def test_both_keys_survive_the_callers_connection(store: PostgresStore, pg_clean_url: str) -> None:
    for unique in (None, Unique()):
        requests = _requests(len(AWKWARD) + 1, unique=unique)
        with psycopg.connect(pg_clean_url) as conn:
            inserted = insert_on(conn, requests)
        assert _keys(inserted) == _keys(requests) == _stored_keys(store, inserted)


def test_both_keys_survive_write_back_finish_dlq_restore_and_fire(store: PostgresStore) -> None:
    store.configure_queue("routes", dlq_enabled=True)
    requests = _requests(len(AWKWARD) + 1, max_attempts=1)
    store.insert(requests)
    # one at a time: an ordering key lets only its head start
    done: list[Job] = []
    while claimed := store.claim("routes", limit=len(requests)):
        for job in claimed:
            outcome = Complete() if job.id % 2 else Fail("no")
            store.finish([Finish(job.lease, outcome)])  # completed (moved) or to the DLQ
            done.append(job)
    assert Counter(_keys(done)) == Counter(_keys(requests))
    dead = store.list_dlq(queue="routes")
    assert dead
    assert all(entry.job.id % 2 == 0 for entry in dead)
    for entry in dead:
        assert _keys([entry.job]) == _keys([requests[entry.job.id - 1]])
        restored = store.retry_from_dlq(entry.job.id)
        assert _keys([restored]) == _keys([requests[entry.job.id - 1]])
    completed = store.list_jobs(state=JobState.COMPLETED, queue="routes", limit=100)
    assert {job.id: _keys([job]) for job in completed} == {
        job.id: _keys([requests[job.id - 1]]) for job in completed
    }
    template = NewJob(kind="tick", queue="routes", concurrency_key=LONGEST, ordering_key="o\tk")
    store.register_schedules([Schedule(name="tick", cron="* * * * *", job=template)])
    [record] = store.list_schedules()
    assert _keys([record.schedule.job]) == _keys([template])
    store.clock.advance(120)  # type: ignore[union-attr]
    [plan] = store.plan_fires().plans
    fired = store.fire(plan)
    assert fired
    assert _keys(fired) == _keys([template]) * len(fired)


def test_a_key_rate_given_empties_the_queues_key_buckets_only(
    store: PostgresStore, pg_pool: ConnectionPool[Any]
) -> None:
    for queue in ("api", "other"):
        store.configure_queue(queue, key_rate_limit=(1.0, 2))
        store.insert([NewJob(kind="k", queue=queue, concurrency_key="a") for _ in range(3)])
        assert len(store.claim(queue, limit=5)) == 2

    def buckets() -> list[tuple[str, str, float]]:
        with pg_pool.connection() as conn:
            rows = conn.execute(
                "SELECT queue, key, tokens FROM awa.flow_key_buckets ORDER BY queue"
            ).fetchall()
        return [(q, k, t) for q, k, t in rows]

    assert buckets() == [("api", "a", 0.0), ("other", "a", 0.0)]
    store.configure_queue("api", key_concurrency_limit=3)  # no key rate given: kept
    assert buckets() == [("api", "a", 0.0), ("other", "a", 0.0)]
    store.configure_queue("api", key_rate_limit=(1.0, 2))
    assert buckets() == [("other", "a", 0.0)]


# -- two claimers on their own connections --------------------------------------------------


def _race(stores: list[PostgresStore], queue: str, rounds: int, check: Callable[[], None]) -> int:
    """``rounds`` times: every store claims at once (a barrier), ``check`` looks at what runs,
    then every claimed job completes. The number of jobs claimed."""
    barrier = threading.Barrier(len(stores))
    claimed: list[list[Job]] = [[] for _ in stores]
    errors: list[BaseException] = []

    def claim(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            claimed[index] = stores[index].claim(queue, limit=10)
        except BaseException as error:  # reported by the test's thread
            errors.append(error)

    total = 0
    for _ in range(rounds):
        threads = [threading.Thread(target=claim, args=(n,)) for n in range(len(stores))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not errors, errors
        check()
        for store, jobs in zip(stores, claimed, strict=True):
            if jobs:
                store.finish([Finish(job.lease, Complete()) for job in jobs])
            total += len(jobs)
    return total


def _running(pool: ConnectionPool[Any], column: str, queue: str) -> Counter[str]:
    with pool.connection() as conn:
        rows = conn.execute(
            f"SELECT {column}, count(*) FROM awa.jobs WHERE queue = %s AND state = 'running'"
            " GROUP BY 1",
            [queue],
        ).fetchall()
    return Counter({key: n for key, n in rows})


@pytest.fixture
def two_stores(pg_clean_url: str) -> Iterator[list[PostgresStore]]:
    """Two stores, each with a pool of its own connections."""
    stores = [PostgresStore(pg_clean_url), PostgresStore(pg_clean_url)]
    try:
        yield stores
    finally:
        for store in stores:
            store.close()


@pytest.mark.parametrize("limited", [False, True])
def test_two_claimers_never_start_two_jobs_of_one_ordering_key(
    two_stores: list[PostgresStore], pg_pool: ConnectionPool[Any], limited: bool
) -> None:
    first, _ = two_stores
    if limited:  # the locked path (lock_queue_flow.sql) as well as claim.sql
        first.configure_queue("ord", concurrency_limit=100)
    keys = ["a", "b", "c", "d", "e"]
    jobs = first.insert(
        [NewJob(kind="k", queue="ord", ordering_key=k) for _ in range(8) for k in keys]
    )
    order: dict[str, list[int]] = {key: [] for key in keys}
    for job in jobs:
        assert job.ordering_key is not None
        order[job.ordering_key].append(job.id)
    started: list[int] = []

    def check() -> None:
        running = _running(pg_pool, "ordering_key", "ord")
        assert max(running.values()) == 1, running
        with pg_pool.connection() as conn:
            rows = conn.execute("SELECT id FROM awa.jobs WHERE state = 'running'").fetchall()
        started.extend(row[0] for row in rows)

    assert _race(two_stores, "ord", 8, check) == len(jobs)
    for key in keys:  # each key's jobs in insert order
        assert [job_id for job_id in started if job_id in order[key]] == order[key]


def test_two_claimers_never_overrun_a_key_concurrency_limit(
    two_stores: list[PostgresStore], pg_pool: ConnectionPool[Any]
) -> None:
    first, _ = two_stores
    first.configure_queue("keyed", key_concurrency_limit=2)
    keys = ["a", "b", "c"]
    first.insert(
        [NewJob(kind="k", queue="keyed", concurrency_key=k) for _ in range(10) for k in keys]
    )
    first.insert([NewJob(kind="k", queue="keyed") for _ in range(4)])  # no key: not held by it
    per_round: list[int] = []

    def check() -> None:
        running = _running(pg_pool, "concurrency_key", "keyed")
        assert all(n <= 2 for key, n in running.items() if key is not None), running
        per_round.append(sum(n for key, n in running.items() if key is not None))

    assert _race(two_stores, "keyed", 5, check) == 34
    # the second claimer waits for the first's lock and counts what it started: every round
    # fills each key's two slots, no more
    assert per_round == [6, 6, 6, 6, 6]


# -- plans behind a large queue -------------------------------------------------------------

QUEUED = 100_000
KEYS = 20
LIMIT = 10

_ADD_KEYED = """
INSERT INTO awa.jobs (kind, queue, state, run_at, created_at, concurrency_key, ordering_key)
SELECT 'chore', 'api', 'available',
       now() - interval '1 hour' + (%(from)s + n) * interval '10 us',
       now() - interval '1 hour', %(concurrency)s, %(ordering)s
FROM generate_series(1, %(n)s) AS n
"""


RUNNING = 300
_ADD_RUNNING = """
INSERT INTO awa.jobs (kind, queue, state, attempt, run_lease, run_at, created_at, attempted_at,
                      heartbeat_at, ordering_key)
SELECT 'chore', 'api', 'running', 1, 1, now(), now(), now(), now(), 'running-' || n
FROM generate_series(1, %(n)s) AS n
"""


@pytest.fixture(scope="module")
def keyed_queue(pg_url: str) -> Iterator[str]:
    """Queue api: 100,000 runnable jobs, most of them of one concurrency key, the oldest (the
    big key ahead of every other), the rest spread over 19 more keys, whose first has one
    ordering key for all its jobs, and the newest 50 without keys; 300 attempts running, each
    of an ordering key of its own; key limits set; analyzed. Emptied after the module's
    tests."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("TRUNCATE awa.jobs, awa.queues")
        big = QUEUED - (KEYS - 1) * 100 - 50
        conn.execute(_ADD_KEYED, {"concurrency": "big", "ordering": None, "n": big, "from": 0})
        for key in range(1, KEYS):
            ordering = "ordered" if key == 1 else None
            params = {"concurrency": f"key-{key:02}", "ordering": ordering, "n": 100, "from": big}
            conn.execute(_ADD_KEYED, params)
        conn.execute(_ADD_KEYED, {"concurrency": None, "ordering": None, "n": 50, "from": QUEUED})
        conn.execute(_ADD_RUNNING, {"n": RUNNING})
        conn.execute(
            "INSERT INTO awa.queues (queue, key_concurrency_limit, key_rate_per_second,"
            " key_rate_burst) VALUES ('api', 5, 100, 100)"
        )
        conn.execute("ANALYZE awa.jobs_hot")
        conn.execute("ANALYZE awa.queues")
    yield pg_url
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("TRUNCATE awa.jobs, awa.queues")


def _params() -> dict[str, Any]:
    return {"now": None, "queue": "api", "limit": LIMIT, "aging_us": 60_000_000}


def _jobs_scans(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        n
        for n in nodes
        if "Scan" in n["Node Type"] and n.get("Relation Name", "").startswith("jobs")
    ]


def _read(nodes: list[dict[str, Any]], indexes: set[str]) -> int:
    """The index entries the scans of ``indexes`` read: the rows they gave, and the rows
    their filters turned away."""
    return sum(
        int((n["Actual Rows"] + n.get("Rows Removed by Filter", 0)) * n["Actual Loops"])
        for n in _jobs_scans(nodes)
        if n.get("Index Name") in indexes
    )


def _assert_keyed_index_scans(nodes: list[dict[str, Any]]) -> None:
    """A keyed window's plan reads the jobs through their indexes only: no sequential or
    bitmap scan of a jobs table, the keys' index among those that ran, and no other index
    than the claim's, the live attempts' and the ordering filter's."""
    assert "Seq Scan" not in {n["Node Type"] for n in _jobs_scans(nodes)}
    assert not [n for n in nodes if "Bitmap" in n["Node Type"]]
    ran = {n.get("Index Name") for n in _jobs_scans(nodes) if n["Actual Loops"]}
    assert "jobs_hot_key_claim_idx" in ran
    assert ran <= {
        "jobs_hot_key_claim_idx",
        "jobs_hot_claim_idx",
        "jobs_hot_live_queue_idx",
        "jobs_hot_ordering_idx",
        "jobs_hot_ordering_live_idx",
    }


@pytest.mark.parametrize("plans", ["custom", "generic"])
@pytest.mark.parametrize("statement", ["flow_candidates_keyed", "flow_candidates_keyed_aged"])
def test_the_keyed_window_steps_over_the_keys_not_the_backlog(
    keyed_queue: str, statement: str, plans: str
) -> None:
    with psycopg.connect(keyed_queue) as conn:
        conn.execute(SQL["session_settings"])
        explain = _explain if plans == "custom" else _explain_generic
        nodes = explain(conn, statement, _params())
        rows = nodes[0]["Actual Rows"]
        conn.rollback()
    assert "Seq Scan" not in {n["Node Type"] for n in nodes}
    _assert_keyed_index_scans(nodes)
    # the ordered key gives its head only (its followers wait for it); each other key and the
    # key-less jobs their window
    assert rows == 1 + (KEYS - 1) * LIMIT + LIMIT
    # each key found by one descent, each window read, and the ordered key's 99 followers the
    # ordering filter steps over: bounded by the keys and the windows, not the 98,050 jobs of
    # the big key. (The key-less jobs, newest, are found through jobs_claim_idx past every
    # keyed one: docs/postgres.md, "Schema 0014", says what that costs.)
    per_key = 4 * LIMIT if statement.endswith("aged") else LIMIT
    keyed = {"jobs_hot_key_claim_idx", "jobs_hot_ordering_idx", "jobs_hot_ordering_live_idx"}
    assert _read(nodes, keyed) <= 2 * KEYS + KEYS * per_key + 2 * 100


@pytest.mark.parametrize("plans", ["custom", "generic"])
def test_the_turn_window_walks_the_keys_through_their_index(keyed_queue: str, plans: str) -> None:
    """flow_candidates_turns.sql on the same queue (key limit 5, no turn taken yet): index
    scans only, the walk and the chosen keys' windows through jobs_key_claim_idx, reading a
    few entries a key it visits, however deep each key's backlog; the best priority and the
    key-less jobs' first through jobs_claim_idx."""
    with psycopg.connect(keyed_queue) as conn:
        conn.execute(SQL["session_settings"])
        explain = _explain if plans == "custom" else _explain_generic
        nodes = explain(
            conn, "flow_candidates_turns", {"now": None, "queue": "api", "limit": LIMIT}
        )
        conn.rollback()
    # (awa.queues, analyzed with its one row, may be read whole: that is one page)
    _assert_keyed_index_scans(nodes)
    # at most LIMIT keys visited (no key is at its limit), each a descent to find it and one
    # to its first job, and each chosen key's window of min(LIMIT, 5) + 1 jobs; the ordered
    # key's window steps over its 99 followers (an entry and an ordering descent each): not
    # the 98,050 jobs of the big key
    keyed = {"jobs_hot_key_claim_idx", "jobs_hot_ordering_idx", "jobs_hot_ordering_live_idx"}
    assert _read(nodes, keyed) <= LIMIT * (2 + 5 + 1) + 3 * 100


def test_the_ordering_filter_is_one_index_descent_per_ordered_candidate(
    keyed_queue: str,
) -> None:
    """claim.sql (the queue's key limits lifted, in a transaction rolled back) meeting an
    ordered key's jobs: the filter looks up each one's lower ids, and its head's live
    attempts, through the ordering indexes, one descent each finding at most one row; never
    a scan of the queue's live attempts, nor of the key's followers from each of them."""
    with psycopg.connect(keyed_queue) as conn:
        conn.execute(SQL["session_settings"])
        conn.execute(
            "UPDATE awa.queues SET key_concurrency_limit = NULL, key_rate_per_second = NULL,"
            " key_rate_burst = NULL WHERE queue = 'api'"
        )
        # the ordered key's jobs first in claim order
        conn.execute(
            "UPDATE awa.jobs SET priority = 1 WHERE queue = 'api' AND ordering_key = 'ordered'"
        )
        params = {**_params(), "deadline": timedelta(minutes=5)}
        nodes = _explain(conn, "claim", params)
        claimed = nodes[0]["Actual Rows"]
        conn.rollback()
    assert "Seq Scan" not in {n["Node Type"] for n in _jobs_scans(nodes)}
    assert claimed == LIMIT  # the head and nine jobs without an ordering key
    ordering = {"jobs_hot_ordering_idx", "jobs_hot_ordering_live_idx"}
    lookups = [n for n in _jobs_scans(nodes) if n.get("Index Name") in ordering]
    assert {n["Index Name"] for n in lookups if n["Actual Loops"]} == ordering
    # 100 ordered jobs met: one lower-id lookup each, one live lookup for the head, and no
    # lookup through another index (the queue's 300 live attempts are not read)
    assert _read(nodes, ordering) <= 100
    assert sum(n["Actual Loops"] for n in lookups) == 100 + 1
    assert _read(nodes, {"jobs_hot_live_queue_idx", "jobs_hot_live_idx"}) == 0
