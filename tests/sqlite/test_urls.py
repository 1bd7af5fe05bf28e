"""``sqlite:`` URLs open a ``SqliteStore``; a URL it cannot read is one ``ValidationError``."""

from __future__ import annotations

from pathlib import Path

import pytest

import awa
from awa.adapters import open_store
from awa.adapters.sqlite import MEMORY, SqliteStore, sqlite_path
from awa.domain import NewJob, ValidationError


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///jobs.db", "jobs.db"),
        ("sqlite:///data/jobs.db", "data/jobs.db"),
        ("sqlite:////var/lib/app/jobs.db", "/var/lib/app/jobs.db"),
        ("SQLite:///my%20jobs.db", "my jobs.db"),
        ("sqlite:///:memory:", MEMORY),
    ],
)
def test_a_url_names_a_path_as_sqlalchemy_writes_it(url: str, path: str) -> None:
    assert sqlite_path(url) == path


@pytest.mark.parametrize(
    "url", ["sqlite://jobs.db", "sqlite:///", "sqlite:///data/", "sqlite:///jobs.db?mode=ro"]
)
def test_a_url_without_a_file_or_with_options_is_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="SQLite URL"):
        open_store(url)


def test_open_store_and_the_client_open_sqlite(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'jobs.db'}")
    assert isinstance(store, SqliteStore)
    store.insert([NewJob(kind="k")])
    store.close()  # type: ignore[attr-defined]
    client = awa.Client(f"sqlite:///{tmp_path / 'jobs.db'}")
    assert client.count_jobs() == 1
    client.close()
    memory = awa.Client("sqlite:///:memory:")
    assert memory.count_jobs() == 0
    memory.close()
