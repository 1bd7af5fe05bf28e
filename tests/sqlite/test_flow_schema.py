"""How the SQLite store keeps a queue's flow limits (migration 0003): the CHECKs refuse what
the domain refuses, at the domain's own bounds; the rate pair and the bucket pair are both or
neither; an upgraded file keeps its settings; the bucket a claim leaves is stored and kept
until the rate is given again; the live count is an index count over one queue."""

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
from awa.domain import NewJob
from awa.domain.flow import (
    BURST_MAX,
    CONCURRENCY_LIMIT_MAX,
    PER_SECOND_MAX,
    PER_SECOND_MIN,
    RateLimit,
)
from awa.ports import QueueSettings

_RATE = {"rate_per_second": 1.0, "rate_burst": 1}


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.db"
    SqliteStore(str(path)).close()
    return path


def _stores(path: Path, **columns: Any) -> bool:
    """Whether a queue row with these columns is accepted."""
    names = ", ".join(["queue", *columns])
    marks = ", ".join(["?"] * (len(columns) + 1))
    with closing(sqlite3.connect(path)) as db:
        try:
            db.execute(
                f"INSERT INTO awa_queues ({names}) VALUES ({marks})", ["q", *columns.values()]
            )
        except sqlite3.IntegrityError:
            return False
        return True


@pytest.mark.parametrize(
    ("columns", "stored"),
    [
        ({"concurrency_limit": 1}, True),
        ({"concurrency_limit": CONCURRENCY_LIMIT_MAX}, True),
        ({"concurrency_limit": 0}, False),
        ({"concurrency_limit": CONCURRENCY_LIMIT_MAX + 1}, False),
        ({"rate_per_second": PER_SECOND_MIN, "rate_burst": 1}, True),
        ({"rate_per_second": PER_SECOND_MAX, "rate_burst": BURST_MAX}, True),
        ({"rate_per_second": math.nextafter(PER_SECOND_MIN, 0), "rate_burst": 1}, False),
        ({"rate_per_second": math.nextafter(PER_SECOND_MAX, math.inf), "rate_burst": 1}, False),
        ({"rate_per_second": 1.0, "rate_burst": 0}, False),
        ({"rate_per_second": 1.0, "rate_burst": BURST_MAX + 1}, False),
        ({"rate_per_second": 1.0}, False),
        ({"rate_burst": 1}, False),
        ({**_RATE, "rate_tokens": 0.0, "rate_updated_at": 0}, True),
        ({**_RATE, "rate_tokens": 1.0, "rate_updated_at": 0}, True),
        ({**_RATE, "rate_tokens": math.nextafter(1.0, 2), "rate_updated_at": 0}, False),
        ({**_RATE, "rate_tokens": -0.5, "rate_updated_at": 0}, False),
        ({**_RATE, "rate_tokens": 1.0}, False),
        ({**_RATE, "rate_updated_at": 0}, False),
        ({"rate_tokens": 0.0, "rate_updated_at": 0}, False),  # a bucket without a rate
    ],
)
def test_the_schema_refuses_what_the_domain_refuses_at_the_same_bounds(
    tmp_path: Path, columns: dict[str, Any], stored: bool
) -> None:
    assert _stores(_file(tmp_path), **columns) is stored


def test_an_upgraded_file_keeps_its_settings_and_has_no_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awa.adapters.sqlite import migrations

    path = tmp_path / "jobs.db"
    with monkeypatch.context() as before:  # a file as the release before 0003 left it
        before.setattr(migrations, "MIGRATIONS", MIGRATIONS[:2])
        before.setattr(migrations, "LATEST_VERSION", 2)
        SqliteStore(str(path)).close()
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(
            "INSERT INTO awa_queues (queue, paused, dlq_enabled, failed_retention_us)"
            " VALUES ('media', 1, 1, 7000000)"
        )
    with SqliteStore(str(path), clock=ManualClock()) as store:
        kept = QueueSettings("media", paused=True, dlq_enabled=True, failed_retention_s=7.0)
        assert store.configure_queue("media", dlq_enabled=True) == kept  # and no limits
        limited = store.configure_queue("media", concurrency_limit=2, rate_limit=(0.5, 3))
        assert limited == attrs.evolve(kept, concurrency_limit=2, rate_limit=RateLimit(0.5, 3))


def _bucket(path: Path, queue: str) -> tuple[float | None, int | None]:
    with closing(sqlite3.connect(path)) as db:
        row = db.execute(
            "SELECT rate_tokens, rate_updated_at FROM awa_queues WHERE queue = ?", (queue,)
        ).fetchone()
    return row[0], row[1]


def test_a_claims_bucket_is_stored_and_only_a_given_rate_resets_it(tmp_path: Path) -> None:
    clock = ManualClock()
    path = tmp_path / "jobs.db"
    with SqliteStore(str(path), clock=clock) as store:
        store.configure_queue("api", rate_limit=(1, 3))
        store.insert([NewJob(kind="k", queue="api") for _ in range(10)])
        assert _bucket(path, "api") == (None, None)  # full
        assert len(store.claim("api", limit=2)) == 2
        stored_us = round(clock.now().timestamp() * 1_000_000)
        assert _bucket(path, "api") == (1.0, stored_us)
        store.configure_queue("api", concurrency_limit=10, dlq_enabled=True)
        store.pause_queue("api")
        store.resume_queue("api")
        assert _bucket(path, "api") == (1.0, stored_us)  # other settings leave it as it was
        assert len(store.claim("api", limit=5)) == 1
        store.configure_queue("api", rate_limit=(1, 3))  # the same rate, given again
        assert _bucket(path, "api") == (None, None)
        assert len(store.claim("api", limit=5)) == 3
        store.configure_queue("api", rate_limit=None)
        assert _bucket(path, "api") == (None, None)


def test_counting_a_queues_live_attempts_uses_its_own_index(tmp_path: Path) -> None:
    with closing(sqlite3.connect(_file(tmp_path))) as db:
        plan = db.execute("EXPLAIN QUERY PLAN " + SQL["live_attempts"], {"queue": "q"}).fetchall()
    assert any(
        "USING COVERING INDEX jobs_live_queue_idx (queue=? AND state=?)" in row[-1] for row in plan
    ), plan
