"""Flow limits on PostgreSQL (migration 0013): the table refuses what the domain refuses, a
rate given resets the stored bucket, the bucket is shared by every store on the database and
follows the store's clock, and the claim of an unlimited queue with jobs is still the one
statement it was."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore, migrate
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.migrations import MIGRATIONS
from awa.domain import NewJob
from awa.domain.flow import BURST_MAX, CONCURRENCY_LIMIT_MAX, PER_SECOND_MAX, PER_SECOND_MIN
from tests.pg_fixtures import migrate_before

FLOW = next(m for m in MIGRATIONS if m.name == "queue_flow_limits")

_SET_LIMITS = """
INSERT INTO awa.queues (queue, concurrency_limit, rate_per_second, rate_burst)
VALUES ('edge', %(concurrency)s, %(per_second)s, %(burst)s)
"""


def _fill(store: PostgresStore, queue: str, count: int) -> None:
    store.insert([NewJob(kind="k", queue=queue) for _ in range(count)])


def _bucket(pool: ConnectionPool[Any], queue: str) -> tuple[Any, Any]:
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT rate_tokens, rate_updated_at FROM awa.queues WHERE queue = %s", [queue]
        ).fetchone()
    assert row is not None
    return row[0], row[1]


#: the queue's limits, and its keys' (0014): the same CHECKs on columns of the same names
_SET_EACH = {
    "": _SET_LIMITS,
    "key_": """
INSERT INTO awa.queues (queue, key_concurrency_limit, key_rate_per_second, key_rate_burst)
VALUES ('edge', %(concurrency)s, %(per_second)s, %(burst)s)
""",
}


@pytest.mark.parametrize("prefix", ["", "key_"])
@pytest.mark.parametrize(
    ("concurrency", "per_second", "burst"),
    [
        (1, PER_SECOND_MIN, 1),
        (CONCURRENCY_LIMIT_MAX, PER_SECOND_MAX, BURST_MAX),
        (None, None, None),
        (7, None, None),
        (None, 2.5, 3),
    ],
)
def test_the_table_takes_every_limit_the_domain_takes(
    pg_clean_url: str,
    prefix: str,
    concurrency: int | None,
    per_second: float | None,
    burst: int | None,
) -> None:
    params = {"concurrency": concurrency, "per_second": per_second, "burst": burst}
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        conn.execute(_SET_EACH[prefix], params)


@pytest.mark.parametrize("prefix", ["", "key_"])
@pytest.mark.parametrize(
    ("concurrency", "per_second", "burst", "constraint"),
    [
        (0, None, None, "concurrency_limit_range"),
        (CONCURRENCY_LIMIT_MAX + 1, None, None, "concurrency_limit_range"),
        (None, PER_SECOND_MIN / 2, 1, "rate_per_second_range"),
        (None, PER_SECOND_MAX * 2, 1, "rate_per_second_range"),
        (None, float("nan"), 1, "rate_per_second_range"),
        (None, 1.0, 0, "rate_burst_range"),
        (None, 1.0, BURST_MAX + 1, "rate_burst_range"),
        (None, 1.0, None, "rate_limit_whole"),
        (None, None, 5, "rate_limit_whole"),
    ],
)
def test_the_table_refuses_every_limit_the_domain_refuses(
    pg_clean_url: str,
    prefix: str,
    concurrency: int | None,
    per_second: float | None,
    burst: int | None,
    constraint: str,
) -> None:
    params = {"concurrency": concurrency, "per_second": per_second, "burst": burst}
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.CheckViolation) as refused:
            conn.execute(_SET_EACH[prefix], params)
        assert refused.value.diag.constraint_name == f"queues_{prefix}{constraint}"


def test_a_bucket_is_stored_whole_and_never_above_its_burst(pg_clean_url: str) -> None:
    with psycopg.connect(pg_clean_url, autocommit=True) as conn:
        conn.execute(_SET_LIMITS, {"concurrency": None, "per_second": 1.0, "burst": 3})
        bad = [
            ("rate_tokens = 1", "queues_rate_bucket_whole"),
            ("rate_tokens = 4, rate_updated_at = now()", "queues_rate_tokens_range"),
            ("rate_tokens = -1, rate_updated_at = now()", "queues_rate_tokens_range"),
            (
                "rate_per_second = NULL, rate_burst = NULL, rate_tokens = 1,"
                " rate_updated_at = now()",
                "queues_rate_bucket_whole",
            ),
        ]
        for assignment, constraint in bad:
            with pytest.raises(psycopg.errors.CheckViolation) as refused:
                conn.execute(f"UPDATE awa.queues SET {assignment} WHERE queue = 'edge'")
            assert refused.value.diag.constraint_name == constraint


def test_the_flow_migration_applies_to_a_database_with_queue_settings(
    empty_database: str,
) -> None:
    with psycopg.connect(empty_database, autocommit=True) as conn:
        migrate_before(conn, FLOW.version)
        conn.execute(
            "INSERT INTO awa.queues (queue, paused, dlq_enabled) VALUES ('mail', true, true)"
        )
        assert migrate(conn)[0] == FLOW.version
    with PostgresStore(empty_database) as store:
        settings = store.configure_queue("mail", concurrency_limit=2)
        assert (settings.paused, settings.dlq_enabled, settings.concurrency_limit) == (
            True,
            True,
            2,
        )
        assert settings.rate_limit is None


def test_the_rate_bucket_is_shared_by_every_store_and_follows_the_clock(
    make_store: Callable[..., PostgresStore], clock: ManualClock, pg_pool: ConnectionPool[Any]
) -> None:
    first, second = make_store(clock), make_store(clock)
    first.configure_queue("api", rate_limit=(2.0, 3))
    _fill(first, "api", 20)
    assert len(first.claim("api", limit=10)) == 3  # the full bucket: burst
    assert second.claim("api", limit=10) == []  # the same bucket, empty
    assert _bucket(pg_pool, "api") == (0.0, clock.now())
    clock.advance(0.5)
    assert len(second.claim("api", limit=10)) == 1
    clock.advance(1.0)
    assert len(first.claim("api", limit=10)) == 2
    assert second.claim("api", limit=10) == []


def test_a_rate_given_again_refills_the_bucket_and_other_settings_keep_it(
    make_store: Callable[..., PostgresStore], clock: ManualClock, pg_pool: ConnectionPool[Any]
) -> None:
    store = make_store(clock)
    store.configure_queue("api", rate_limit=(1.0, 2))
    _fill(store, "api", 10)
    assert len(store.claim("api", limit=5)) == 2
    store.configure_queue("api", dlq_enabled=True, concurrency_limit=5)
    assert _bucket(pg_pool, "api") == (0.0, clock.now())
    assert store.claim("api", limit=5) == []
    store.configure_queue("api", rate_limit=(1.0, 2))  # the same rate: a full bucket again
    assert _bucket(pg_pool, "api") == (None, None)
    assert len(store.claim("api", limit=5)) == 2


def test_a_queue_that_loses_its_limits_is_claimed_in_one_statement_again(
    make_store: Callable[..., PostgresStore], clock: ManualClock
) -> None:
    store, other = make_store(clock), make_store(clock)
    store.configure_queue("api", concurrency_limit=1)
    _fill(store, "api", 5)
    assert len(store.claim("api", limit=5)) == 1  # the store now takes the limited path
    other.configure_queue("api", concurrency_limit=None)
    assert len(store.claim("api", limit=5)) == 4  # its stale belief claimed by claim.sql
    other.configure_queue("api", concurrency_limit=1)
    _fill(store, "api", 2)
    assert store.claim("api", limit=5) == []  # believed unlimited: claim.sql's guard holds


class _Recorded(psycopg.Cursor[Any]):
    """A cursor that writes down the statements it runs (``statements``, shared)."""

    statements: list[str] = []

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
        _Recorded.statements.append(query if isinstance(query, str) else str(query))
        return super().execute(query, params, **kwargs)


@pytest.fixture
def recording_store(pg_clean_url: str, clock: ManualClock) -> Iterator[PostgresStore]:
    def configure(conn: psycopg.Connection[Any]) -> None:
        conn.cursor_factory = _Recorded

    pool: ConnectionPool[Any] = ConnectionPool(
        pg_clean_url,
        min_size=1,
        max_size=1,
        kwargs={"autocommit": True},
        configure=configure,
        open=True,
    )
    try:
        with PostgresStore(pool, clock=clock) as store:
            store.count_jobs()  # the session settings and the schema check, done once
            yield store
    finally:
        pool.close()


def _names(statements: list[str]) -> list[str]:
    by_text = {text: name for name, text in SQL.items()}
    return [by_text.get(text, text) for text in statements]


def test_an_unlimited_queue_with_jobs_is_claimed_in_one_statement(
    recording_store: PostgresStore,
) -> None:
    store = recording_store
    _fill(store, "free", 3)
    store.configure_queue("api", concurrency_limit=1)  # another queue's limit changes nothing
    _Recorded.statements.clear()
    assert len(store.claim("free", limit=2)) == 2
    assert _names(_Recorded.statements) == ["claim"]
    _Recorded.statements.clear()
    assert len(store.claim("free", limit=2, priority_aging_s=60)) == 1
    assert _names(_Recorded.statements) == ["claim_aged"]
    _Recorded.statements.clear()
    assert store.claim("free", limit=2) == []  # empty: one more read says it is not limited
    assert _names(_Recorded.statements) == ["claim", "queue_limited"]


def test_a_limited_queue_is_claimed_in_three_statements_of_one_transaction(
    recording_store: PostgresStore,
) -> None:
    store = recording_store
    store.configure_queue("api", concurrency_limit=2, rate_limit=(100.0, 100))
    _fill(store, "api", 3)
    _Recorded.statements.clear()
    assert len(store.claim("api", limit=5)) == 2  # the first claim finds the queue limited
    assert _names(_Recorded.statements) == [
        "claim",
        "queue_limited",
        "lock_queue_flow",
        "flow_candidates",
        "claim_granted",
    ]
    _Recorded.statements.clear()
    assert store.claim("api", limit=5) == []  # the limit is full: nothing to write
    assert _names(_Recorded.statements) == ["lock_queue_flow", "flow_candidates"]
