"""Hostile input is stored verbatim and does nothing; invalid input never reaches SQL.

The invalid calls are the contract's refusals table (``awa.testing.contract.REFUSALS``), the
same rows every store runs; here each is also proved to be refused before any SQL.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from psycopg_pool import ConnectionPool

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.domain import (
    Complete,
    DatabaseError,
    JobState,
    Lease,
    NewJob,
    ResumeCallback,
    ValidationError,
)
from awa.ports import Finish
from awa.testing.contract import REFUSALS, Given, Refusal

NASTY = [
    "'; DROP TABLE awa.jobs; --",
    'Robert"); DELETE FROM awa.dlq; --',
    "back\\slash \\x00 and \\u0000 spelled out",
    "%s %(now)s $1 ? :name",
    "/* comment */ -- line comment",
    "unicode: 日本語 ☃ 🚀 e\u0301 \u202eRTL\u202c",
    "",
]


def test_hostile_strings_are_stored_verbatim_and_harmless(store: PostgresStore) -> None:
    args = {"values": NASTY, **{text or "empty": text for text in NASTY}}
    [job] = store.insert(
        [NewJob(kind="k", args=args, tags=[t for t in NASTY if t][:5], metadata={"m": NASTY})]
    )
    again = store.get_job(job.id)
    assert again.args == args
    assert again.tags == tuple(t for t in NASTY if t)[:5]
    assert again.metadata == {"m": NASTY}
    [claimed] = store.claim("default", limit=1)
    result = store.finish([Finish(claimed.lease, Complete(), metadata={"note": NASTY[0]})])[0]
    assert result.job.metadata["note"] == NASTY[0]  # type: ignore[union-attr]
    assert store.list_jobs(state=JobState.COMPLETED)[0].args == args


def test_one_megabyte_of_args_round_trips(store: PostgresStore) -> None:
    big = {"blob": "x" * (1024 * 1024), "list": list(range(1000))}
    [job] = store.insert([NewJob(kind="big", args=big)])
    assert store.get_job(job.id).args == big
    [claimed] = store.claim("default", limit=1)
    assert claimed.args == big


def test_nul_bytes_are_refused_with_a_clear_message() -> None:
    with pytest.raises(ValidationError, match="NUL"):
        NewJob(kind="k", args={"a": "bad\x00value"})
    with pytest.raises(ValidationError, match="NUL"):
        NewJob(kind="k", metadata={"bad\x00key": 1})
    with pytest.raises(ValidationError, match="NUL"):
        NewJob(kind="k", tags=["bad\x00tag"])


@pytest.fixture
def store_without_database(pg_url: str) -> PostgresStore:
    """A store whose pool was never opened: any SQL at all fails with ``DatabaseError``, so a
    ``ValidationError`` from it proves the check ran before SQL."""
    pool: ConnectionPool[Any] = ConnectionPool(pg_url, open=False)
    return PostgresStore(pool, clock=ManualClock())


def test_a_store_without_database_fails_as_database_error(
    store_without_database: PostgresStore,
) -> None:
    with pytest.raises(DatabaseError):
        store_without_database.list_jobs()


# stand-ins for the values a populated store would supply: no SQL runs, so none is looked up
STAND_INS: dict[Given, object] = {
    Given.LIVE_LEASE: Lease(1, 1),
    Given.PENDING_CALLBACK: "x",
    Given.FAILED_JOB: 1,
}


@pytest.mark.parametrize("refusal", REFUSALS, ids=[r.id for r in REFUSALS])
def test_invalid_values_are_refused_before_any_sql_runs(
    store_without_database: PostgresStore, refusal: Refusal
) -> None:
    args, kwargs = refusal.arguments(STAND_INS)
    with pytest.raises(refusal.error, match=re.escape(refusal.fragment)):
        getattr(store_without_database, refusal.verb)(*args, **kwargs)


def test_unstorable_values_are_refused_before_a_store_sees_them() -> None:
    with pytest.raises(ValidationError, match="unpaired surrogate"):
        NewJob(kind="k", args={"a": "\ud800"})
    with pytest.raises(ValidationError, match="JSON cannot represent"):
        ResumeCallback(float("nan"))
