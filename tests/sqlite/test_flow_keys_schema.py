"""How the SQLite store keeps keyed flow control (migration 0004): the CHECKs refuse what the
domain refuses, at the domain's own bounds, on every table that holds a key; a file of 0003
upgrades keeping its settings, buckets and jobs; the key buckets and the turn cursor a claim
leaves are stored, and only a key rate given again empties the buckets; the ordering filter,
the per-key window and the per-key live count read their own indexes."""

from __future__ import annotations

import math
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import attrs
import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import SqliteStore
from awa.adapters.sqlite._sql import SQL
from awa.adapters.sqlite.migrations import MIGRATIONS
from awa.domain import Fail, JobState, NewJob, Schedule
from awa.domain.flow import (
    BURST_MAX,
    CONCURRENCY_LIMIT_MAX,
    FLOW_KEY_LENGTH_MAX,
    PER_SECOND_MAX,
    PER_SECOND_MIN,
    RateLimit,
)
from awa.ports import Finish, QueueSettings

_KEY_RATE = {"key_rate_per_second": 1.0, "key_rate_burst": 1}
_LONGEST = "k" * FLOW_KEY_LENGTH_MAX


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.db"
    SqliteStore(str(path)).close()
    return path


def _stores(path: Path, table: str, **columns: Any) -> bool:
    """Whether a row of ``table`` with these columns is accepted."""
    names = ", ".join(columns)
    marks = ", ".join(["?"] * len(columns))
    with closing(sqlite3.connect(path)) as db:
        try:
            db.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(columns.values()))
        except sqlite3.IntegrityError:
            return False
        return True


@pytest.mark.parametrize(
    ("columns", "stored"),
    [
        ({"key_concurrency_limit": 1}, True),
        ({"key_concurrency_limit": CONCURRENCY_LIMIT_MAX}, True),
        ({"key_concurrency_limit": 0}, False),
        ({"key_concurrency_limit": CONCURRENCY_LIMIT_MAX + 1}, False),
        ({"key_rate_per_second": PER_SECOND_MIN, "key_rate_burst": 1}, True),
        ({"key_rate_per_second": PER_SECOND_MAX, "key_rate_burst": BURST_MAX}, True),
        ({"key_rate_per_second": math.nextafter(PER_SECOND_MIN, 0), "key_rate_burst": 1}, False),
        (
            {"key_rate_per_second": math.nextafter(PER_SECOND_MAX, math.inf), "key_rate_burst": 1},
            False,
        ),
        ({"key_rate_per_second": 1.0, "key_rate_burst": 0}, False),
        ({"key_rate_per_second": 1.0, "key_rate_burst": BURST_MAX + 1}, False),
        ({"key_rate_per_second": 1.0}, False),
        ({"key_rate_burst": 1}, False),
        ({**_KEY_RATE, "turn_cursor": _LONGEST, "turn_taken": 1}, True),
        ({"turn_cursor": None, "turn_taken": 1}, True),  # the key-less jobs' turn
        ({"turn_cursor": _LONGEST + "k", "turn_taken": 1}, False),
        ({"turn_cursor": "", "turn_taken": 1}, False),
        ({"turn_cursor": "a", "turn_taken": 0}, False),  # a cursor is a turn taken
        ({"turn_taken": 2}, False),
        ({"turn_taken": None}, False),
    ],
)
def test_the_queue_columns_refuse_what_the_domain_refuses_at_the_same_bounds(
    tmp_path: Path, columns: dict[str, Any], stored: bool
) -> None:
    assert _stores(_file(tmp_path), "awa_queues", queue="q", **columns) is stored


@pytest.mark.parametrize(
    ("columns", "stored"),
    [
        ({"key": "a", "tokens": 0.0}, True),
        ({"key": _LONGEST, "tokens": 2.5}, True),
        ({"key": _LONGEST + "k", "tokens": 1.0}, False),
        ({"key": "", "tokens": 1.0}, False),
        ({"key": None, "tokens": 1.0}, False),
        ({"key": "a", "tokens": -0.5}, False),
        ({"key": "a", "tokens": None}, False),
    ],
)
def test_a_key_bucket_row_refuses_a_bad_key_or_negative_tokens(
    tmp_path: Path, columns: dict[str, Any], stored: bool
) -> None:
    path = _file(tmp_path)
    assert _stores(path, "awa_key_buckets", queue="q", updated_at=0, **columns) is stored


def _one_of_each_home(path: Path) -> None:
    """A job in awa_jobs, one in awa_dlq and a schedule, each without keys."""
    with SqliteStore(str(path), clock=ManualClock()) as store:
        store.set_dlq_enabled("dead", True)
        store.insert([NewJob(kind="k", queue="live"), NewJob(kind="k", queue="dead")])
        [job] = store.claim("dead", limit=1)
        store.finish([Finish(job.lease, Fail("gone", terminal=True))])
        store.register_schedules([Schedule(name="tick", cron="* * * * *", job=NewJob(kind="k"))])


@pytest.mark.parametrize("table", ["awa_jobs", "awa_dlq", "awa_schedules"])
@pytest.mark.parametrize("column", ["concurrency_key", "ordering_key"])
@pytest.mark.parametrize(
    ("value", "stored"),
    [(None, True), ("a", True), (_LONGEST, True), ("", False), (_LONGEST + "k", False)],
)
def test_every_home_of_a_key_holds_it_to_1_to_128_characters(
    tmp_path: Path, table: str, column: str, value: str | None, stored: bool
) -> None:
    path = tmp_path / "jobs.db"
    _one_of_each_home(path)
    with closing(sqlite3.connect(path)) as db:
        assert db.execute(f"SELECT count(*) FROM {table}").fetchone() == (1,)
        try:
            db.execute(f"UPDATE {table} SET {column} = ?", (value,))
        except sqlite3.IntegrityError:
            accepted = False
        else:
            accepted = True
    assert accepted is stored


def test_a_file_of_0003_upgrades_keeping_its_settings_bucket_and_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awa.adapters.sqlite import migrations

    path = tmp_path / "jobs.db"
    clock = ManualClock()
    now_us = round(clock.now().timestamp() * 1_000_000)
    with monkeypatch.context() as before:  # a file as the release before 0004 left it
        before.setattr(migrations, "MIGRATIONS", MIGRATIONS[:3])
        before.setattr(migrations, "LATEST_VERSION", 3)
        SqliteStore(str(path)).close()
    # written as 0003's code wrote them: the code of this version names the new columns
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(
            "INSERT INTO awa_queues (queue, dlq_enabled, failed_retention_us, concurrency_limit,"
            " rate_per_second, rate_burst, rate_tokens, rate_updated_at)"
            " VALUES ('api', 1, 7000000, 3, 1.0, 5, 4.0, ?)",
            (now_us,),
        )
        db.executemany(
            "INSERT INTO awa_jobs (kind, queue, state, priority, max_attempts, run_at, created_at,"
            " attempt, run_lease, attempted_at, heartbeat_at)"
            " VALUES ('k', 'api', ?, 2, 5, ?, ?, ?, ?, ?, ?)",
            [("running", now_us, now_us, 1, 1, now_us, now_us)]
            + [("available", now_us, now_us, 0, 0, None, None)] * 3,
        )
    with SqliteStore(str(path), clock=clock) as store:
        settings = store.configure_queue("api", dlq_enabled=True)
        assert settings == QueueSettings(
            "api",
            dlq_enabled=True,
            failed_retention_s=7.0,
            concurrency_limit=3,
            rate_limit=RateLimit(1.0, 5),
        )  # and no key limits
        jobs = store.list_jobs(queue="api")
        assert sorted((j.id, j.state, j.concurrency_key, j.ordering_key) for j in jobs) == [
            (1, JobState.RUNNING, None, None),
            *[(n, JobState.AVAILABLE, None, None) for n in (2, 3, 4)],
        ]
        with closing(sqlite3.connect(path)) as db:
            row = db.execute(
                "SELECT rate_tokens, rate_updated_at, turn_cursor, turn_taken FROM awa_queues"
            ).fetchone()
        assert row == (4.0, now_us, None, 0)  # the bucket as it was; no turn taken yet
        # the old jobs and new keyed ones claim side by side under the new limits
        keyed = store.configure_queue("api", key_concurrency_limit=1)
        assert keyed == attrs.evolve(settings, key_concurrency_limit=1)
        store.insert([NewJob(kind="k", queue="api", concurrency_key="t") for _ in range(2)])
        claimed = store.claim("api", limit=10)  # the queue's 3 leave 2 free
        assert sorted(j.concurrency_key or "" for j in claimed) == ["", "t"]


def _key_buckets(path: Path) -> dict[str, tuple[float, int]]:
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT key, tokens, updated_at FROM awa_key_buckets WHERE queue = 'api'")
        return {key: (tokens, updated_at) for key, tokens, updated_at in rows}


def _turn(path: Path) -> tuple[str | None, int]:
    with closing(sqlite3.connect(path)) as db:
        row = db.execute("SELECT turn_cursor, turn_taken FROM awa_queues WHERE queue = 'api'")
        cursor, taken = row.fetchone()
        return cursor, taken


def test_a_claims_key_buckets_and_turn_are_stored_and_only_a_given_key_rate_resets_them(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    path = tmp_path / "jobs.db"
    with SqliteStore(str(path), clock=clock) as store:
        store.configure_queue("api", key_rate_limit=(1, 2))
        assert _turn(path) == (None, 0)
        keys = ["a", "a", "a", "b", "b", "b"]
        store.insert([NewJob(kind="k", queue="api", concurrency_key=key) for key in keys])
        assert _key_buckets(path) == {}  # every key full
        assert len(store.claim("api", limit=3)) == 3
        at_us = round(clock.now().timestamp() * 1_000_000)
        buckets = _key_buckets(path)
        assert sorted(tokens for tokens, _ in buckets.values()) == [0.0, 1.0]
        assert {updated for _, updated in buckets.values()} == {at_us}
        cursor, taken = _turn(path)
        assert taken == 1
        assert cursor in ("a", "b")
        store.configure_queue("api", concurrency_limit=10, rate_limit=(5, 5), dlq_enabled=True)
        assert _key_buckets(path) == buckets  # other settings leave them as they were
        assert _turn(path) == (cursor, 1)
        assert len(store.claim("api", limit=5)) == 1  # the key with one token left
        store.configure_queue("api", key_rate_limit=(1, 2))  # the same rate, given again
        assert _key_buckets(path) == {}
        assert len(store.claim("api", limit=5)) == 2  # one left of each key, both full
        store.configure_queue("api", key_rate_limit=None)
        assert _key_buckets(path) == {}


def _plan(statement: str) -> list[str]:
    with closing(sqlite3.connect(":memory:")) as db:
        for migration in MIGRATIONS:
            db.executescript(migration.sql)
        params = {"queue": "q", "now": 0, "limit": 3, "keys": "[]"}
        return [row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + SQL[statement], params)]


@pytest.mark.parametrize(
    "statement",
    [
        "claim_candidates",
        "claim_candidates_aged",
        "claim_candidates_per_key",
        "claim_candidates_per_key_aged",
    ],
)
def test_the_ordering_filter_reads_two_covering_index_ranges(statement: str) -> None:
    plan = _plan(statement)
    assert any(
        "COVERING INDEX jobs_ordering_idx (queue=? AND ordering_key=? AND id<?)" in step
        for step in plan
    ), plan
    assert any(
        "COVERING INDEX jobs_ordering_live_idx (queue=? AND ordering_key=? AND state=?)" in step
        for step in plan
    ), plan
    assert not any("TEMP B-TREE" in step and "ORDER BY" in step for step in plan), plan


@pytest.mark.parametrize("statement", ["claim_candidates_per_key", "claim_candidates_per_key_aged"])
def test_the_per_key_window_seeks_each_key_then_reads_its_range_in_claim_order(
    statement: str,
) -> None:
    plan = _plan(statement)
    # the keys one seek each (a skip scan), not every job of the queue
    assert any(
        "USING INDEX jobs_claim_key_idx (queue=? AND concurrency_key>?)" in step for step in plan
    ), plan
    # each key's jobs (IS: the key-less ones too) a range of its own, in the index's order
    assert any(
        "SEARCH j USING INDEX jobs_claim_key_idx (queue=? AND concurrency_key=?" in step
        for step in plan
    ), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan  # no sort


def test_counting_live_attempts_per_key_uses_its_own_index() -> None:
    plan = _plan("live_by_key")
    assert any("COVERING INDEX jobs_live_key_idx (queue=?" in step for step in plan), plan


def test_a_queue_with_only_key_limits_is_limited() -> None:
    """The claim takes the keyed path when no queue limit is set (QueueFlow is not None)."""
    with SqliteStore(":memory:", clock=ManualClock()) as store:
        store.configure_queue("api", key_concurrency_limit=1)
        store.insert([NewJob(kind="k", queue="api", concurrency_key="t") for _ in range(3)])
        assert len(store.claim("api", limit=3)) == 1
        assert store.configure_queue("api", key_concurrency_limit=None) == QueueSettings("api")
        assert len(store.claim("api", limit=3)) == 2
