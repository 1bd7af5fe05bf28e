"""SQLite migrations: the ledger, idempotent, one migrator at a time across stores, a newer
schema refused by ``migrate`` (and still usable by older code), an unmigrated file named with
the command that fixes it; a missing file is made only where asked."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import LATEST_VERSION, SchemaNewerThanCode, SqliteStore, schema_version
from awa.adapters.sqlite.migrations import MIGRATIONS, statements
from awa.domain import DatabaseError, NewJob, SchemaNotMigrated


def _ledger(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT version, name FROM awa_schema_version ORDER BY version"
        ).fetchall()


def test_opening_migrates_once_and_store_migrate_then_has_nothing_to_do(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    with SqliteStore(str(path), clock=ManualClock()) as store:
        assert store.migrate() == []
        assert store.insert([NewJob(kind="k")])[0].id == 1
    assert _ledger(path) == [(m.version, m.name) for m in MIGRATIONS]
    with sqlite3.connect(path) as conn:
        assert schema_version(conn) == LATEST_VERSION


def test_a_store_told_not_to_migrate_names_the_command_then_migrates_when_asked(
    tmp_path: Path,
) -> None:
    with SqliteStore(str(tmp_path / "jobs.db"), migrate=False) as store:
        with pytest.raises(SchemaNotMigrated, match="awa migrate"):
            store.insert([NewJob(kind="k")])
        assert store.migrate() == [m.version for m in MIGRATIONS]
        assert store.count_jobs() == 0


def test_stores_opening_one_new_file_at_once_apply_each_migration_exactly_once(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "jobs.db")
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            start.wait()
            SqliteStore(path).close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert _ledger(tmp_path / "jobs.db") == [(m.version, m.name) for m in MIGRATIONS]


def test_a_schema_newer_than_the_code_is_used_but_never_migrated(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    SqliteStore(str(path)).close()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO awa_schema_version VALUES (?, 'from_the_future', 'x', 0)",
            (LATEST_VERSION + 1,),
        )
    with SqliteStore(str(path)) as store:  # a rolling upgrade: older code keeps working
        assert store.insert([NewJob(kind="k")])[0].id == 1
        with pytest.raises(SchemaNewerThanCode, match="upgrade awa"):
            store.migrate()


def test_a_missing_file_is_refused_where_it_must_exist_and_nothing_is_made(
    tmp_path: Path,
) -> None:
    path = tmp_path / "typo.db"
    with pytest.raises(DatabaseError, match=r"no SQLite database at .*awa migrate"):
        SqliteStore(str(path), create=False)
    assert not path.exists()


def test_a_failed_migration_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awa.adapters.sqlite import migrations

    broken = migrations.Migration(1, "broken", "CREATE TABLE awa_jobs (id INTEGER);\nNOT SQL;\n")
    monkeypatch.setattr(migrations, "MIGRATIONS", (broken,))
    with pytest.raises(DatabaseError):
        SqliteStore(str(tmp_path / "jobs.db"))
    with sqlite3.connect(tmp_path / "jobs.db") as conn:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    assert tables == []


def test_every_migration_splits_into_whole_statements() -> None:
    for migration in MIGRATIONS:
        split = statements(migration)
        assert split
        assert all(sqlite3.complete_statement(s) for s in split)
        assert sum(s.count("CREATE TABLE") for s in split) == migration.sql.count("CREATE TABLE")


def test_the_failed_retention_upgrade_keeps_every_queues_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awa.adapters.sqlite import migrations

    path = tmp_path / "jobs.db"
    with monkeypatch.context() as before:  # a file as the release before 0002 left it
        before.setattr(migrations, "MIGRATIONS", MIGRATIONS[:1])
        before.setattr(migrations, "LATEST_VERSION", 1)
        SqliteStore(str(path)).close()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO awa_queues (queue, dlq_enabled, finished_retention_us)"
            " VALUES ('media', 1, 3600000000)"
        )
    with SqliteStore(str(path), clock=ManualClock()) as store:
        [media] = store.queue_stats()
        assert (media.dlq_enabled, media.finished_retention_s, media.failed_retention_s) == (
            True,
            3600.0,
            None,
        )
    with sqlite3.connect(path) as conn:
        indexes = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    assert {"jobs_completed_idx", "jobs_failed_idx"} <= indexes
    assert "jobs_finished_idx" not in indexes


@pytest.mark.parametrize(
    ("statement", "index"),
    [("delete_completed", "jobs_completed_idx"), ("delete_failed", "jobs_failed_idx")],
)
def test_each_retention_deletes_through_the_index_of_its_own_states(
    tmp_path: Path, statement: str, index: str
) -> None:
    from awa.adapters.sqlite._sql import SQL

    SqliteStore(str(tmp_path / "jobs.db")).close()
    with sqlite3.connect(tmp_path / "jobs.db") as conn:
        params = {"now": 0, "older_than": 1, "limit": 10}
        plan = conn.execute("EXPLAIN QUERY PLAN " + SQL[statement], params).fetchall()
    assert any(f"USING INDEX {index}" in row[-1] for row in plan), plan
