"""SQLite passes the same behavioural contract as every other ``ClaimStore``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import SqliteStore
from awa.ports import ClaimStore
from awa.testing.contract import ClaimStoreContract, Plant
from tests.planting import plant_in_sqlite


class TestSqliteContract(ClaimStoreContract):
    @pytest.fixture
    def store(  # type: ignore[override]
        self, make_store: Callable[..., SqliteStore], clock: ManualClock
    ) -> ClaimStore:
        return make_store(clock)

    @pytest.fixture
    def plant_unreadable(self, tmp_path: Path) -> Plant:
        return functools.partial(plant_in_sqlite, tmp_path / "jobs.db")
