"""Hostile input is stored verbatim and does nothing; invalid input never reaches SQL."""

from __future__ import annotations

from collections.abc import Callable
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
from awa.ports import BATCH_SIZE_MAX, Finish, Heartbeat

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


LEASE = Lease(1, 1)

BAD_CALLS: dict[str, Callable[[PostgresStore], object]] = {
    "lone surrogate in args": lambda s: s.insert([NewJob(kind="k", args={"a": "\ud800"})]),
    "not a NewJob": lambda s: s.insert([{"kind": "k"}]),  # type: ignore[list-item]
    "too many jobs": lambda s: s.insert([NewJob(kind="k")] * (BATCH_SIZE_MAX + 1)),
    "claim limit 0": lambda s: s.claim("default", limit=0),
    "claim limit too big": lambda s: s.claim("default", limit=BATCH_SIZE_MAX + 1),
    "claim bad queue": lambda s: s.claim("Bad Queue; --", limit=1),
    "claim negative deadline": lambda s: s.claim("default", limit=1, deadline_duration_s=-1),
    "heartbeat NUL progress": lambda s: s.heartbeat([Heartbeat(LEASE, progress={"p": "\x00"})]),
    "finish NUL metadata": lambda s: s.finish([Finish(LEASE, Complete(), metadata={"m": "\x00"})]),
    "finish not a Finish": lambda s: s.finish([LEASE]),  # type: ignore[list-item]
    "callback timeout 0": lambda s: s.register_callback(LEASE, timeout_s=0),
    "callback id empty": lambda s: s.register_callback(LEASE, callback_id=""),
    "resume with NaN": lambda s: s.resolve_callback("x", ResumeCallback(float("nan"))),
    "callback heartbeat timeout -1": lambda s: s.heartbeat_callback("x", timeout_s=-1),
    "rescue staleness 0": lambda s: s.rescue(staleness_s=0),
    "promote limit -1": lambda s: s.promote(limit=-1),
    "job id string": lambda s: s.get_job("1; DROP TABLE awa.jobs"),  # type: ignore[arg-type]
    "cancel job id float": lambda s: s.cancel(1.5),  # type: ignore[arg-type]
    "unknown state": lambda s: s.list_jobs(state="bogus"),  # type: ignore[arg-type]
    "list bad kind": lambda s: s.list_jobs(kind="1bad kind"),
    "pause bad queue": lambda s: s.pause_queue("UPPER"),
    "dlq reason blank": lambda s: s.move_to_dlq(1, reason="  "),
    "bulk retry no filter": lambda s: s.bulk_retry_from_dlq(),
    "purge no filter": lambda s: s.purge_dlq(),
    "list dlq bad queue": lambda s: s.list_dlq(queue="no spaces allowed"),
}


@pytest.mark.parametrize("call", list(BAD_CALLS.values()), ids=list(BAD_CALLS))
def test_invalid_values_are_refused_before_any_sql_runs(
    store_without_database: PostgresStore, call: Callable[[PostgresStore], object]
) -> None:
    with pytest.raises(ValidationError):
        call(store_without_database)
