"""SQLite stores for the tests in this folder: each test gets a file of its own in its
temporary directory (WAL mode, migrated on open), so ids start at 1 as in the memory store."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import SqliteStore


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def make_store(tmp_path: Path) -> Iterator[Callable[..., SqliteStore]]:
    """Builds stores on one file in this test's directory; closes them at the end."""
    made: list[SqliteStore] = []

    def make(clock: Any = None, rng: random.Random | None = None) -> SqliteStore:
        store = SqliteStore(
            str(tmp_path / "jobs.db"), clock=clock, rng=rng if rng is not None else random.Random(0)
        )
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: Callable[..., SqliteStore], clock: ManualClock) -> SqliteStore:
    return make_store(clock)
