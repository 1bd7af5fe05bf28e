"""PostgreSQL specifics behind the contract's subscribe, leadership and retention verbs:
the listener thread survives a lost connection and a failing listener, stops when asked;
every way a job becomes available is announced; the leader row moves when its holder stops
renewing; retention is bounded and skips rows someone else holds."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from awa.adapters.memory import ManualClock
from awa.adapters.postgres import PostgresStore
from awa.adapters.postgres.listen import LISTENER_APPLICATION_NAME
from awa.domain import Complete, Fail, JobState, NewJob, RetryCallback, WaitForCallback
from awa.domain.values import CallbackToken
from awa.ports import Applied, CallbackResolved, Event, Finish, JobsAvailable

WAIT_S = 10.0


class _Heard:
    def __init__(self) -> None:
        self.seen: list[Event] = []
        self._changed = threading.Condition()

    def __call__(self, event: Event) -> None:
        with self._changed:
            self.seen.append(event)
            self._changed.notify_all()

    def wait_for(self, event: Event, timeout_s: float = WAIT_S) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: event in self.seen, timeout=timeout_s)

    def clear(self) -> None:
        with self._changed:
            self.seen.clear()


def _listener_pids(pool: ConnectionPool[Any]) -> list[int]:
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database()",
            (LISTENER_APPLICATION_NAME,),
        ).fetchall()
    return [row[0] for row in rows]


def _until(condition: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    done = threading.Event()
    for _ in range(int(timeout_s / 0.05)):
        if condition():
            return
        done.wait(0.05)
    raise AssertionError(f"not reached within {timeout_s}s")


def test_listening_survives_a_lost_connection(
    make_store: Callable[..., PostgresStore], pg_pool: ConnectionPool[Any]
) -> None:
    store = make_store(ManualClock())
    _until(lambda: _listener_pids(pg_pool) == [])  # earlier tests' listeners have stopped
    heard = _Heard()
    unsubscribe = store.subscribe(heard)
    try:
        [old_pid] = _listener_pids(pg_pool)
        with pg_pool.connection() as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (old_pid,))
        _until(lambda: [p for p in _listener_pids(pg_pool) if p != old_pid] != [])

        # the new connection's LISTEN may trail its appearance by a moment: poll, bounded
        def heard_new_work() -> bool:
            heard.clear()
            store.insert([NewJob(kind="k", queue="after_loss")])
            return heard.wait_for(JobsAvailable("after_loss"), timeout_s=0.5)

        _until(heard_new_work)
    finally:
        unsubscribe()


def test_a_failing_listener_does_not_stop_the_others(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store(ManualClock())
    calls: list[Event] = []

    def broken(event: Event) -> None:
        calls.append(event)
        raise RuntimeError("listener bug")

    heard = _Heard()
    unsubscribe_broken = store.subscribe(broken)
    unsubscribe = store.subscribe(heard)
    try:
        store.insert([NewJob(kind="k", queue="one")])
        assert heard.wait_for(JobsAvailable("one"))
        store.insert([NewJob(kind="k", queue="two")])
        assert heard.wait_for(JobsAvailable("two"))  # the thread lived through the error
        assert JobsAvailable("two") in calls
    finally:
        unsubscribe_broken()
        unsubscribe()


def test_the_last_unsubscribe_and_close_stop_the_listener(
    pg_url: str, pg_pool: ConnectionPool[Any]
) -> None:
    _until(lambda: _listener_pids(pg_pool) == [])  # earlier tests' listeners have stopped
    with PostgresStore(pg_url, pool_size=1) as store:
        first = store.subscribe(_Heard())
        second = store.subscribe(_Heard())
        assert len(_listener_pids(pg_pool)) == 1  # one connection for every listener
        first()
        assert store._subscriptions.listening
        second()
        _until(lambda: _listener_pids(pg_pool) == [])
        store.subscribe(_Heard())
        assert len(_listener_pids(pg_pool)) == 1
    _until(lambda: _listener_pids(pg_pool) == [])  # close() stopped it


def test_every_way_a_job_becomes_available_is_announced(
    make_store: Callable[..., PostgresStore],
) -> None:
    clock = ManualClock()
    store = make_store(clock)
    store.set_dlq_enabled("dead", True)
    heard = _Heard()
    unsubscribe = store.subscribe(heard)
    try:
        # operator retry of a failed job
        store.insert([NewJob(kind="k", queue="retried", max_attempts=1)])
        [job] = store.claim("retried", limit=1)
        store.finish([Finish(job.lease, Fail("boom", terminal=True))])
        heard.clear()
        store.retry(job.id)
        assert heard.wait_for(JobsAvailable("retried"))
        # retry from the dead-letter queue
        store.insert([NewJob(kind="k", queue="dead", max_attempts=1)])
        [job] = store.claim("dead", limit=1)
        store.finish([Finish(job.lease, Fail("boom", terminal=True))])
        heard.clear()
        store.retry_from_dlq(job.id)
        assert heard.wait_for(JobsAvailable("dead"))
        # retry_external: the callback restarts the job from scratch
        store.insert([NewJob(kind="k", queue="called")])
        [job] = store.claim("called", limit=1)
        registered = store.register_callback(job.lease, timeout_s=60)
        assert isinstance(registered, Applied)
        callback_id = registered.job.callback_id
        assert callback_id is not None
        token = CallbackToken(callback_id, job.lease, clock.now())
        store.finish([Finish(job.lease, WaitForCallback(token))])
        heard.clear()
        store.resolve_callback(callback_id, RetryCallback())
        assert heard.wait_for(CallbackResolved(job.lease))
        assert heard.wait_for(JobsAvailable("called"))
    finally:
        unsubscribe()


def test_leadership_moves_when_the_leader_stops_renewing(
    make_store: Callable[..., PostgresStore],
) -> None:
    clock = ManualClock()
    store = make_store(clock)
    assert store.try_lead("a", ttl_s=15)
    assert store.leader() == "a"
    clock.advance(10)
    assert not store.try_lead("b", ttl_s=15)
    clock.advance(5)  # a's last renewal was 15 s ago: it is presumed dead
    assert store.leader() is None
    assert store.try_lead("b", ttl_s=15)
    assert not store.try_lead("a", ttl_s=15)  # a came back: b leads now
    assert store.leader() == "b"


def test_concurrent_candidates_elect_exactly_one_leader(
    pg_url: str, make_store: Callable[..., PostgresStore]
) -> None:
    make_store()  # empty tables
    start = threading.Barrier(8)
    won: list[str] = []

    def candidate(name: str) -> None:
        with PostgresStore(pg_url, pool_size=1) as store:
            start.wait()
            if store.try_lead(name, ttl_s=30):
                won.append(name)

    threads = [threading.Thread(target=candidate, args=(f"w{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1


def test_retention_skips_rows_another_transaction_holds(
    make_store: Callable[..., PostgresStore], pg_url: str
) -> None:
    clock = ManualClock()
    store = make_store(clock)
    store.insert([NewJob(kind="k") for _ in range(3)])
    jobs = store.claim("default", limit=3)
    store.finish([Finish(job.lease, Complete()) for job in jobs])
    clock.advance(100)
    with psycopg.connect(pg_url) as holder:  # an operator's transaction holds the first row
        holder.execute("SELECT 1 FROM awa.jobs WHERE id = %s FOR UPDATE", (jobs[0].id,))
        assert store.delete_finished(older_than_s=50) == 2
        holder.rollback()
    assert store.get_job(jobs[0].id).state is JobState.COMPLETED
    assert store.delete_finished(older_than_s=50) == 1
