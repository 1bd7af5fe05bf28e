"""A queue's key limit and its ordering keys hold across real processes on one SQLite file.

Four processes (``flow_claimer.py``) claim from one queue with ``key_concurrency_limit=2``
whose jobs carry three concurrency keys (and some none) and two ordering keys (and most none),
in rounds as in test_flow_processes.py: each round some finish what they hold, then all four
claim at once, their ``BEGIN IMMEDIATE`` transactions racing for the file's write lock. A
trigger the test adds samples, inside every transaction that makes an attempt live, how many
attempts of its concurrency key and of its ordering key are live, and how many unfinished jobs
of its ordering key are older: an observer outside the store's code that sees every claim,
whichever process made it. The same rounds with no limit and the ordering filter planted out
of the claimers show the probe catches a breach of each.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from awa.adapters.sqlite import SqliteStore
from awa.domain import NewJob
from tests.sqlite.test_flow_processes import PER_CLAIM, PROCESSES, QUEUE, ROUNDS, Claimers, _rounds

KEY_LIMIT = 2
CONCURRENCY_KEYS = ("a", "b", "c", None)
ORDERING_KEYS = ("o1", "o2", None, None, None)  # 5 and 4: each ordering key spans every key

# one row per attempt made live: its keys' live counts and its ordering key's older unfinished
# jobs, as that transaction sees them (`IS`, so a job without a key counts its own kind)
PROBE = """
CREATE TABLE probe_keys (
    id INTEGER PRIMARY KEY AUTOINCREMENT, job_id INTEGER, concurrency_key TEXT,
    ordering_key TEXT, key_live INTEGER, ordering_live INTEGER, older_unfinished INTEGER);
CREATE TRIGGER probe_keys_on_claim AFTER UPDATE OF state ON awa_jobs
WHEN new.queue = 'api' AND new.state IN ('running', 'waiting_external')
     AND old.state NOT IN ('running', 'waiting_external')
BEGIN
    INSERT INTO probe_keys
        (job_id, concurrency_key, ordering_key, key_live, ordering_live, older_unfinished)
    SELECT new.id, new.concurrency_key, new.ordering_key,
        (SELECT count(*) FROM awa_jobs WHERE queue = new.queue
            AND concurrency_key IS new.concurrency_key
            AND state IN ('running', 'waiting_external')),
        (SELECT count(*) FROM awa_jobs WHERE queue = new.queue
            AND ordering_key IS new.ordering_key AND state IN ('running', 'waiting_external')),
        (SELECT count(*) FROM awa_jobs WHERE queue = new.queue
            AND ordering_key IS new.ordering_key AND id < new.id
            AND state NOT IN ('completed', 'failed', 'cancelled'));
END;
"""


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "jobs.db"
    with SqliteStore(str(path)) as store:
        store.insert(
            [
                NewJob(
                    kind="k",
                    queue=QUEUE,
                    concurrency_key=CONCURRENCY_KEYS[n % len(CONCURRENCY_KEYS)],
                    ordering_key=ORDERING_KEYS[n % len(ORDERING_KEYS)],
                )
                for n in range(PROCESSES * PER_CLAIM * ROUNDS)
            ]
        )
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(PROBE)
    return path


def _samples(db: Path) -> list[tuple[int, str | None, str | None, int, int, int]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(
            "SELECT job_id, concurrency_key, ordering_key, key_live, ordering_live,"
            " older_unfinished FROM probe_keys ORDER BY id"
        ).fetchall()


def _worst(samples: list[tuple[int, str | None, str | None, int, int, int]]) -> dict[str, int]:
    """The most live of one concurrency key, of one ordering key, and the most older
    unfinished jobs of its ordering key any attempt started with."""
    keyed = [s for s in samples if s[1] is not None]
    ordered = [s for s in samples if s[2] is not None]
    return {
        "key_live": max(s[3] for s in keyed),
        "ordering_live": max(s[4] for s in ordered),
        "older_unfinished": max(s[5] for s in ordered),
    }


@pytest.fixture
def claimers(db: Path) -> Iterator[Claimers]:
    started = Claimers(db)
    yield started
    started.close()


def test_four_processes_hold_each_keys_limit_and_run_each_ordering_key_in_order(
    db: Path, claimers: Claimers
) -> None:
    with SqliteStore(str(db)) as store:
        store.configure_queue(QUEUE, key_concurrency_limit=KEY_LIMIT)
    _, claimed_by = _rounds(claimers, limit=None)
    samples = _samples(db)
    assert len(samples) == sum(claimed_by.values())  # one sample per attempt made live
    # each key's limit reached, never passed; each ordering key one at a time, head first
    assert _worst(samples) == {"key_live": KEY_LIMIT, "ordering_live": 1, "older_unfinished": 0}
    for key in ("o1", "o2"):
        started = [s[0] for s in samples if s[2] == key]
        assert len(started) > 5, samples  # the keys' jobs ran, not only waited
        assert started == sorted(started)  # in insert order
    # the key-less jobs are held by no key limit: they ran beside the keyed ones
    assert max(s[3] for s in samples if s[1] is None) > KEY_LIMIT


def test_without_the_limit_and_the_filter_the_same_rounds_breach_both_so_the_probe_can_fail(
    db: Path,
) -> None:
    started = Claimers(db, ["--without-ordering-filter"])
    try:
        _rounds(started, limit=None)
    finally:
        started.close()
    worst = _worst(_samples(db))
    assert worst["key_live"] > KEY_LIMIT
    assert worst["ordering_live"] > 1
    assert worst["older_unfinished"] > 0
