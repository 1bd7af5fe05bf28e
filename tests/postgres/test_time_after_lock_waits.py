"""A statement that waited for a lock stamps the time it took effect, not the time it began.

PostgreSQL's ``now()`` is the start of the transaction. A claim held back for 8 s by a
migration's table lock stamped that start as the attempt's first heartbeat, and rescue found
the attempt stale the moment the lock went. Here another session holds the lock (a table lock
as a migration or ``LOCK TABLE`` takes, or a row lock), the verb is started, and once the
server shows it waiting (``pg_stat_activity``, a signal, not a sleep) a short, measured
interval passes; the holder reads the server's clock and lets go. Every lifecycle time the verb
wrote must be at least that release time. The store has no injected clock: the database's
clock is the one under test (with a clock injected, its time is bound as before).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import attrs
import psycopg
import pytest

from awa.adapters.postgres import PostgresStore
from awa.domain import Complete, Fail, Job, JobState, NewJob, Schedule, Snooze, WaitForCallback
from awa.domain.values import CallbackToken
from awa.ports import Applied, Finish, Heartbeat, WriteResult
from tests.lock_waits import start_blocked

#: how long the verb waits once the server shows it waiting: the scenario's wait, kept short
WAITED_S = 0.2
DEADLINE_S = 300.0
CALLBACK_TIMEOUT_S = 600.0


@pytest.fixture
def store(pg_clean_url: str) -> Iterator[PostgresStore]:
    """The database's clock, as in production; a held row is waited for long enough that the
    holder lets it go first, however slow the machine."""
    with PostgresStore(pg_clean_url, rng=random.Random(0), held_row_wait_s=8.0) as opened:
        opened.ping()  # the schema check happens now, not behind the held lock
        yield opened


@pytest.fixture
def holder(pg_clean_url: str) -> Iterator[psycopg.Connection[Any]]:
    """Another session, whose open transaction holds the lock."""
    with psycopg.connect(pg_clean_url) as conn:
        yield conn
        conn.rollback()


def _after_a_wait(
    holder: psycopg.Connection[Any], hold: str, params: Any, action: Callable[[], Any]
) -> tuple[Any, datetime]:
    """Run ``action`` while ``holder`` holds a lock (``hold``); once the server shows a session
    waiting for a lock, wait ``WAITED_S`` more, read the server's time and release. Returns what
    ``action`` returned and that time, which is before the release."""
    holder.execute(hold, params)
    blocked = start_blocked(holder, action)
    assert blocked.waiting, f"the verb did not wait for the lock: {blocked.outcome()}"
    holder.execute("SELECT pg_sleep(%s)", [WAITED_S])
    released = holder.execute("SELECT clock_timestamp()").fetchone()
    assert released is not None
    holder.commit()
    outcome = blocked.outcome()
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome, released[0]


def _lock_table(table: str) -> tuple[str, list[Any]]:
    return f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE", []


def _lock_row(job: Job) -> tuple[str, list[Any]]:
    return "SELECT 1 FROM awa.jobs WHERE id = %s FOR UPDATE", [job.id]


def _running(store: PostgresStore, **fields: Any) -> Job:
    store.insert([NewJob(kind="k", **fields)])
    [job] = store.claim("default", limit=1, deadline_duration_s=DEADLINE_S)
    return job


def _applied(results: list[WriteResult] | WriteResult) -> Job:
    result = results[0] if isinstance(results, list) else results
    assert isinstance(result, Applied), result
    return result.job


@pytest.mark.parametrize("aging_s", [0.0, 60.0], ids=["plain", "aged"])
def test_a_claim_behind_a_table_lock_stamps_the_time_it_took_effect(
    store: PostgresStore, holder: psycopg.Connection[Any], aging_s: float
) -> None:
    """The issue's scenario: a worker claimed the moment a migration's lock went, and its
    attempts were rescued as stale 20-40 ms later."""
    store.insert([NewJob(kind="k")])
    claimed, released_at = _after_a_wait(
        holder,
        *_lock_table("awa.jobs"),
        lambda: store.claim(
            "default", limit=1, deadline_duration_s=DEADLINE_S, priority_aging_s=aging_s
        ),
    )
    [job] = claimed
    assert job.attempted_at is not None
    assert job.attempted_at >= released_at
    assert job.heartbeat_at == job.attempted_at
    assert job.deadline_at == job.attempted_at + timedelta(seconds=DEADLINE_S)
    assert store.rescue(staleness_s=WAITED_S) == []  # not stale: it was just claimed


def test_a_heartbeat_that_waited_for_its_row_stamps_the_time_it_took_effect(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    beaten, released_at = _after_a_wait(
        holder, *_lock_row(job), lambda: store.heartbeat([Heartbeat(job.lease)])
    )
    heartbeat_at = _applied(beaten).heartbeat_at
    assert heartbeat_at is not None
    assert heartbeat_at >= released_at


def test_a_heartbeat_behind_a_table_lock_stamps_the_time_it_took_effect(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    jobs = [_running(store), _running(store)]
    beaten, released_at = _after_a_wait(
        holder,
        *_lock_table("awa.jobs"),
        lambda: store.heartbeat([Heartbeat(job.lease) for job in jobs]),
    )
    for result in beaten:
        heartbeat_at = _applied([result]).heartbeat_at
        assert heartbeat_at is not None
        assert heartbeat_at >= released_at


def test_a_completion_that_waited_for_its_row_stamps_the_time_it_took_effect(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    done, released_at = _after_a_wait(
        holder,
        *_lock_row(job),
        lambda: store.finish([Finish(job.lease, Complete(), claimed=job)]),
    )
    finalized_at = _applied(done).finalized_at
    assert finalized_at is not None
    assert finalized_at >= released_at


def test_a_snooze_that_waited_for_its_row_counts_from_the_time_it_took_effect(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    snoozed, released_at = _after_a_wait(
        holder, *_lock_row(job), lambda: store.finish([Finish(job.lease, Snooze(30))])
    )
    assert _applied(snoozed).run_at >= released_at + timedelta(seconds=30)


def test_a_retry_after_a_failure_that_waited_counts_its_backoff_from_then(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    failed, released_at = _after_a_wait(
        holder, *_lock_row(job), lambda: store.finish([Finish(job.lease, Fail("boom"))])
    )
    retried = _applied(failed)
    assert retried.state is JobState.RETRYABLE
    assert retried.errors[-1].at >= released_at
    assert retried.run_at > released_at


def test_a_cancel_that_waited_for_its_row_stamps_the_time_it_took_effect(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    cancelled, released_at = _after_a_wait(holder, *_lock_row(job), lambda: store.cancel(job.id))
    assert cancelled.finalized_at is not None
    assert cancelled.finalized_at >= released_at


def test_a_callback_registered_after_a_wait_times_out_from_then(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    registered, released_at = _after_a_wait(
        holder,
        *_lock_row(job),
        lambda: store.register_callback(job.lease, timeout_s=CALLBACK_TIMEOUT_S),
    )
    timeout_at = _applied(registered).callback_timeout_at
    assert timeout_at is not None
    assert timeout_at >= released_at + timedelta(seconds=CALLBACK_TIMEOUT_S)


def test_a_callback_heartbeat_that_waited_extends_from_then(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    callback_id = _applied(store.register_callback(job.lease)).callback_id or ""
    token = CallbackToken(callback_id, job.lease, job.run_at)
    store.finish([Finish(job.lease, WaitForCallback(token))])
    extended, released_at = _after_a_wait(
        holder,
        *_lock_row(job),
        lambda: store.heartbeat_callback(callback_id, timeout_s=CALLBACK_TIMEOUT_S),
    )
    assert extended.callback_timeout_at is not None
    assert extended.callback_timeout_at >= released_at + timedelta(seconds=CALLBACK_TIMEOUT_S)


def test_a_dead_letter_retry_that_waited_is_due_from_then(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    store.set_dlq_enabled("dead", True)
    store.insert([NewJob(kind="k", queue="dead")])
    [job] = store.claim("dead", limit=1)
    store.finish([Finish(job.lease, Fail("x", terminal=True))])
    retried, released_at = _after_a_wait(
        holder,
        "SELECT 1 FROM awa.dlq WHERE id = %s FOR UPDATE",
        [job.id],
        lambda: store.retry_from_dlq(job.id),
    )
    assert retried.run_at >= released_at


def test_a_move_to_the_dlq_that_waited_stamps_the_time_it_took_effect(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    store.finish([Finish(job.lease, Fail("x", terminal=True))])
    entry, released_at = _after_a_wait(
        holder, *_lock_row(job), lambda: store.move_to_dlq(job.id, reason="operator")
    )
    assert entry.dlq_at >= released_at


def test_a_rescue_behind_a_table_lock_judges_and_stamps_at_the_time_it_took_effect(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    job = _running(store)
    rescued, released_at = _after_a_wait(
        holder, *_lock_table("awa.jobs"), lambda: store.rescue(staleness_s=0.001)
    )
    [one] = rescued
    assert one.job.id == job.id
    assert one.job.errors[-1].at >= released_at
    assert one.job.run_at > released_at


def test_a_schedule_registered_after_a_wait_is_stamped_when_it_took_effect(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    tick = Schedule(name="tick", cron="* * * * *", job=NewJob(kind="tick", args={"n": 1}))
    store.register_schedules([tick])
    changed = attrs.evolve(tick, job=NewJob(kind="tick", args={"n": 2}))
    [record], released_at = _after_a_wait(
        holder,
        "SELECT 1 FROM awa.schedules WHERE name = %s FOR UPDATE",
        ["tick"],
        lambda: store.register_schedules([changed]),
    )
    assert record.updated_at >= released_at


def test_a_leadership_renewed_after_a_wait_lasts_its_ttl_from_then(
    store: PostgresStore, holder: psycopg.Connection[Any]
) -> None:
    assert store.try_lead("me", ttl_s=30)
    renewed, released_at = _after_a_wait(
        holder,
        "SELECT 1 FROM awa.leader WHERE name = 'maintenance' FOR UPDATE",
        [],
        lambda: store.try_lead("me", ttl_s=30),
    )
    assert renewed
    row = holder.execute("SELECT expires_at FROM awa.leader").fetchone()
    holder.rollback()
    assert row is not None
    assert row[0] >= released_at + timedelta(seconds=30)
