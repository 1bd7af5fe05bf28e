"""SQLite passes the same behavioural contract as every other ``ClaimStore``."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import SqliteStore
from awa.ports import ClaimStore
from awa.testing.contract import ClaimStoreContract, Plant


class TestSqliteContract(ClaimStoreContract):
    @pytest.fixture
    def store(  # type: ignore[override]
        self, make_store: Callable[..., SqliteStore], clock: ManualClock
    ) -> ClaimStore:
        return make_store(clock)

    @pytest.fixture
    def plant_unreadable(self, tmp_path: Path) -> Plant:
        """Writes what no reader takes straight into the file, as a hand or a bug would."""

        def plant(job_id: int, column: str, *, too_late: bool = False) -> None:
            value = _UNREADABLE.get(column, 2**62 if too_late else -(2**62))
            with closing(sqlite3.connect(tmp_path / "jobs.db")) as db, db:
                for table in ("awa_jobs", "awa_dlq"):
                    db.execute(f"UPDATE {table} SET {column} = ? WHERE id = ?", (value, job_id))

        return plant


# a time is INTEGER microseconds: +-2**62 is some 146,000 years from the epoch
_UNREADABLE: dict[str, object] = {
    "args": '{"unterminated": ',
    "metadata": "[1, 2]",
    "errors": '[{"error": "no attempt or time"}]',
}
