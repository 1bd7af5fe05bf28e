"""The job file's permissions: a file the store creates, and the -wal and -shm files SQLite
makes beside it, are the owner's alone (0600); a file that exists keeps its mode."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

import awa
from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import SqliteStore
from awa.domain import DatabaseError, NewJob


@pytest.fixture(autouse=True)
def common_umask() -> Iterator[None]:
    """The usual umask, under which sqlite3 alone would make the file 0644."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def _modes(path: Path) -> dict[str, int]:
    """The permission bits of the job file and of its -wal and -shm, by suffix."""
    files = {"": path, "-wal": Path(f"{path}-wal"), "-shm": Path(f"{path}-shm")}
    return {suffix: stat.S_IMODE(file.stat().st_mode) for suffix, file in files.items()}


def test_a_new_job_file_and_its_wal_and_shm_are_the_owners_alone(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    with SqliteStore(str(path), clock=ManualClock()) as store:
        store.insert([NewJob(kind="k")])  # a write: the -wal and -shm exist while it is open
        assert _modes(path) == {"": 0o600, "-wal": 0o600, "-shm": 0o600}


def test_a_job_file_made_from_a_url_is_the_owners_alone(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    client = awa.Client(f"sqlite:///{path}")
    try:
        client.insert({"to": "ada"}, kind="send_report")
        assert _modes(path) == {"": 0o600, "-wal": 0o600, "-shm": 0o600}
    finally:
        client.close()


def test_an_existing_job_file_keeps_its_mode_and_lends_it_to_its_wal_and_shm(
    tmp_path: Path,
) -> None:
    path = tmp_path / "jobs.db"
    path.touch()
    path.chmod(0o640)  # an operator's choice: a group that reads the jobs
    with SqliteStore(str(path), clock=ManualClock()) as store:
        store.insert([NewJob(kind="k")])
        assert _modes(path) == {"": 0o640, "-wal": 0o640, "-shm": 0o640}


def test_a_job_file_in_a_missing_folder_is_one_database_error(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "jobs.db"
    with pytest.raises(DatabaseError, match="SQLite database"):
        SqliteStore(str(path))
    assert not path.parent.exists()
