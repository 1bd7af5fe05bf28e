"""Several stores on one file, as worker processes share it: claims are disjoint, leadership
is one expiring row, hints cross from one store to another, and an idle listener reads no
table (only ``PRAGMA data_version``)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from awa.adapters.memory import ManualClock
from awa.adapters.sqlite import SqliteStore
from awa.adapters.sqlite.hints import HintPoller
from awa.domain import Complete, NewJob, ResumeCallback
from awa.ports import (
    Applied,
    CallbackResolved,
    CancelRequested,
    Event,
    Finish,
    JobsAvailable,
    Stale,
    StaleReason,
)
from awa.testing.contract._helpers import _Events, _park


def test_threads_on_their_own_stores_claim_disjoint_jobs(tmp_path: Path) -> None:
    """Each round every store claims while the others hold their claims unfinished."""
    path = str(tmp_path / "jobs.db")
    stores, rounds, batch = 4, 20, 7
    with SqliteStore(path) as producer:
        producer.insert([NewJob(kind="k") for _ in range(stores * rounds * batch)])
    claimed: list[int] = []
    turn = threading.Barrier(stores)

    def claim_rounds() -> None:
        with SqliteStore(path) as store:
            for _ in range(rounds):
                jobs = store.claim("default", limit=batch)
                claimed.extend(job.id for job in jobs)
                turn.wait()  # everyone holds a claim now
                store.finish([Finish(job.lease, Complete()) for job in jobs])
                turn.wait()

    threads = [threading.Thread(target=claim_rounds) for _ in range(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == list(range(1, stores * rounds * batch + 1))  # each once


def test_leadership_is_one_row_that_lapses_to_another_store(tmp_path: Path) -> None:
    clock = ManualClock()
    path = str(tmp_path / "jobs.db")
    with SqliteStore(path, clock=clock) as first, SqliteStore(path, clock=clock) as second:
        assert first.try_lead("first", ttl_s=10)
        assert not second.try_lead("second", ttl_s=10)
        clock.advance(9)
        assert first.try_lead("first", ttl_s=10)  # a renewal
        clock.advance(9)
        assert not second.try_lead("second", ttl_s=10)
        clock.advance(1)
        assert second.try_lead("second", ttl_s=10)  # the first stopped renewing
        assert first.leader() == "second"
        second.release_lead("second")
        assert first.try_lead("first", ttl_s=10)


def test_hints_cross_from_one_store_to_another(tmp_path: Path) -> None:
    clock = ManualClock()
    path = str(tmp_path / "jobs.db")
    with SqliteStore(path, clock=clock) as worker, SqliteStore(path, clock=clock) as other:
        events = _Events()
        worker.subscribe(events)
        assert worker.listening
        [job] = other.insert([NewJob(kind="k", queue="elsewhere")])
        assert events.wait_for(JobsAvailable("elsewhere"))
        [running] = other.claim("elsewhere", limit=1)
        other.cancel(running.id)
        assert events.wait_for(CancelRequested(running.lease))
        other.insert([NewJob(kind="k", queue="called")])
        [parked] = other.claim("called", limit=1)
        callback_id = _park(other, parked)
        other.resolve_callback(callback_id, ResumeCallback({}))
        assert events.wait_for(CallbackResolved(parked.lease))
        assert job.queue == "elsewhere"


def test_an_idle_listener_asks_only_for_the_change_counter(tmp_path: Path) -> None:
    path = str(tmp_path / "jobs.db")
    SqliteStore(path).close()
    statements: list[str] = []
    heard: list[Event] = []
    polled = threading.Event()

    def traced() -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

        def trace(statement: str) -> None:
            statements.append(statement)
            if len(statements) > 20:
                polled.set()

        conn.set_trace_callback(trace)
        return conn

    poller = HintPoller(traced, "listener", 0.001, heard.append)
    try:
        assert polled.wait(10)
        idle = statements[1:]  # after the first read of where the hints stand
        assert idle
        assert {s.strip().splitlines()[-1] for s in idle} == {"PRAGMA data_version"}
        with SqliteStore(path) as writer:
            writer.insert([NewJob(kind="k", queue="woken")])
        _wait(lambda: JobsAvailable("woken") in heard)
        assert any("awa_hints" in s for s in statements)
    finally:
        poller.stop()


def _wait(condition: Callable[[], bool]) -> None:
    done = threading.Event()
    for _ in range(2000):
        if condition():
            return
        done.wait(0.005)
    raise AssertionError("not within 10 s")


def test_a_lease_from_another_store_is_fenced_like_its_own(tmp_path: Path) -> None:
    clock = ManualClock()
    path = str(tmp_path / "jobs.db")
    with SqliteStore(path, clock=clock) as first, SqliteStore(path, clock=clock) as second:
        first.insert([NewJob(kind="k")])
        [job] = first.claim("default", limit=1)
        clock.advance(120)
        [rescued] = second.rescue(staleness_s=90)
        clock.advance(3)  # past the retry's backoff
        [again] = second.claim("default", limit=2)
        assert (rescued.job.id, again.run_lease) == (job.id, 2)
        [late] = first.finish([Finish(job.lease, Complete())])
        assert isinstance(late, Stale)
        assert late.reason is StaleReason.LEASE_SUPERSEDED
        [done] = second.finish([Finish(again.lease, Complete())])
        assert isinstance(done, Applied)


def test_the_hint_log_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    with SqliteStore(str(path)) as store:
        for _ in range(1400):  # one hint each: work available on "default"
            store.insert([NewJob(kind="k")])
    with sqlite3.connect(path) as conn:
        [(kept, newest)] = conn.execute("SELECT count(*), max(id) FROM awa_hints").fetchall()
    assert newest == 1400
    assert 1000 <= kept < 1000 + 256  # pruned to the newest 1,000 every 256 hints
