"""Liveness that does not depend on hosts agreeing about the time, on the event loop turning,
or on every store call returning.

* A worker whose clock runs ahead of the store's keeps its attempts: deadlines are carried
  over as time left, measured on the worker's own clock.
* An async handler that blocks the event loop cannot make the other attempts of its process
  look dead: heartbeats come from a thread of their own, and the block is logged once, naming
  the job.
* A store call that never returns is abandoned after its bound, and its service runs again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest

import awa
from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import DatabaseError, Job
from awa.ports import ClaimStore, SystemClock
from awa.runtime.store_calls import StoreCalls

from .conftest import Backend, reaches, run, until

S = awa.JobState


@dataclass
class Work:
    n: int


class AheadClock(SystemClock):
    """This host's clock, ``ahead_s`` ahead of everybody else's."""

    def __init__(self, ahead_s: float) -> None:
        self.ahead = timedelta(seconds=ahead_s)

    def now(self) -> datetime:
        return super().now() + self.ahead


def test_a_worker_ahead_of_the_store_keeps_its_attempts_to_their_deadline(
    backend: Backend,
) -> None:
    """The store's clock says the attempt has 300 s left; the worker's clock is 400 s ahead.
    The worker's deadline check must not see the attempt as overdue."""

    async def story() -> None:
        store_clock = ManualClock()
        store = backend.store(store_clock)
        worker_clock = ManualClock(store_clock.now() + timedelta(seconds=400))
        client = awa.AsyncClient(store=store, clock=worker_clock)
        release = asyncio.Event()

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            await release.wait()

        await client.start([("default", 1)])
        job = await client.insert(Work(1))
        await until(lambda: client.runtime is not None and client.runtime.running("default") == 1)
        runtime = client.runtime
        assert runtime is not None
        await runtime.service("deadlines").run_once(worker_clock.now())
        assert runtime.stats.dropped == 0
        # the worker's clock reaches the deadline (300 s + 1 s grace) counted from its claim
        worker_clock.advance(301)
        await runtime.service("deadlines").run_once(worker_clock.now())
        assert runtime.stats.dropped == 1
        release.set()
        assert (await client.get_job(job.id)).state is S.RUNNING  # left to maintenance
        await client.shutdown(timeout=0)

    run(story)


@pytest.mark.postgres
def test_a_worker_400s_ahead_of_the_database_completes_jobs(pg_clean_url: str) -> None:
    """No injected clock: the database's clock writes ``deadline_at``, the worker's is 400 s
    ahead of it (the default deadline is 300 s)."""
    from awa.adapters.postgres import PostgresStore

    async def story() -> None:
        store = PostgresStore(pg_clean_url)
        client = awa.AsyncClient(store=store, clock=AheadClock(400))

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            await asyncio.sleep(0.2)  # long enough for the deadline service to look at it

        try:
            jobs = await client.insert_many([Work(n) for n in range(5)])
            await client.start([("default", 5)])
            for job in jobs:
                done = await reaches(client, job.id, S.COMPLETED)
                assert done.attempt == 1
                assert done.errors == ()
            assert client.runtime is not None
            assert client.runtime.stats.dropped == 0
        finally:
            await client.close()
            store.close()

    run(story)


# -- a blocked event loop -----------------------------------------------------------------


def _real_time_store(backend: Backend) -> tuple[ClaimStore, list[Any]]:
    """The backend's store on real time: the memory store or SQLite on the system clock, or
    PostgreSQL on the database's clock."""
    if backend.name == "memory":
        return MemoryStore(), []
    if backend.name == "sqlite":
        from awa.adapters.sqlite import SqliteStore

        made = SqliteStore(str(backend._request.getfixturevalue("tmp_path") / "real-time.db"))
        return made, [made.close]
    from awa.adapters.postgres import PostgresStore

    store = PostgresStore(backend._request.getfixturevalue("pg_clean_url"))
    return store, [store.close]


def test_a_handler_blocking_the_loop_costs_no_other_job_an_attempt(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """One async handler blocks its process's loop for 8 s; heartbeats are due every 1 s and
    an attempt is presumed dead after 3 s. A second process leads maintenance all along."""

    async def story() -> None:
        store, closers = _real_time_store(backend)
        blocked = awa.AsyncClient(store=store)
        watcher = awa.Client(store=store)
        others_started = threading.Event()

        @blocked.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            if job.args.n == 0:
                await asyncio.to_thread(others_started.wait, 10)
                time.sleep(8)  # the bug under test: blocking code in a coroutine
            else:
                await asyncio.sleep(0.5)  # still awaiting when the block starts

        @watcher.task(dict, kind="unrelated", queue="watch")
        def unrelated(job: awa.SyncJob[dict[str, Any]]) -> None:
            return None

        settings: dict[str, Any] = {"heartbeat_interval": 1, "heartbeat_staleness": 3}
        try:
            watcher.start(
                [("watch", 1)],
                runtime_config=awa.RuntimeConfig(maintenance_interval_s=0.5),
                **settings,
            )
            blocker = await blocked.insert(Work(0))
            others = await blocked.insert_many([Work(n) for n in (1, 2, 3)])
            await blocked.start(
                [("default", 4)],
                runtime_config=awa.RuntimeConfig(run_maintenance=False),
                **settings,
            )
            await until(lambda: blocked.runtime is not None and blocked.runtime.stats.claimed == 4)
            # the three others are in their handlers' awaits when the block starts
            others_started.set()
            for job in [blocker, *others]:
                done = await reaches(blocked, job.id, S.COMPLETED, timeout_s=30)
                assert (done.attempt, done.errors) == (1, ()), f"job {job.id} lost an attempt"
        finally:
            await blocked.close()
            watcher.close()
            for close in closers:
                close()
        warnings = [
            r for r in caplog.records if r.levelno == logging.WARNING and "event loop" in r.message
        ]
        assert len(warnings) == 1, [r.message for r in warnings]
        assert f"by job {blocker.id} (kind work, queue default)" in warnings[0].message

    caplog.set_level(logging.WARNING, logger="awa.runtime")
    run(story)


# -- store calls that never return --------------------------------------------------------


def test_a_store_call_that_outlives_its_bound_is_abandoned() -> None:
    async def story() -> None:
        calls = StoreCalls(inline=False, timeout_s=0.2)
        never = threading.Event()
        with pytest.raises(DatabaseError, match=r"wait took longer than 0\.2s and was abandoned"):
            await calls(never.wait)
        assert await calls(lambda: 42) == 42
        never.set()
        calls.shutdown()

    asyncio.run(story())


def test_store_calls_get_a_fresh_pool_when_every_thread_is_stuck() -> None:
    async def story() -> None:
        calls = StoreCalls(inline=False, timeout_s=0.1)
        never = threading.Event()
        for _ in range(4):
            with pytest.raises(DatabaseError):
                await calls(never.wait)
        # every thread of the first pool is held; this call runs on a new one
        assert await calls(lambda: "answered") == "answered"
        never.set()
        calls.shutdown()

    asyncio.run(story())


class _ClaimWedgesOnce:
    """A store whose first claim never returns (a connection gone silent)."""

    def __init__(self, store: ClaimStore) -> None:
        self._store = store
        self.wedge = threading.Event()
        self._wedged = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def claim(self, queue: str, **kwargs: Any) -> Sequence[Job]:
        if not self._wedged:
            self._wedged = True
            self.wedge.wait()
            return []
        return self._store.claim(queue, **kwargs)


def test_a_wedged_claim_does_not_stop_the_worker_claiming() -> None:
    async def story() -> None:
        wedging = _ClaimWedgesOnce(MemoryStore())
        client = awa.AsyncClient(store=wedging, clock=SystemClock())  # type: ignore[arg-type]

        @client.task(Work)
        async def handle(job: awa.Job[Work]) -> None:
            return None

        job = await client.insert(Work(1))
        try:
            await client.start(
                [("default", 2)],
                poll_interval=0.05,
                runtime_config=awa.RuntimeConfig(store_call_timeout_s=0.3),
            )
            await reaches(client, job.id, S.COMPLETED)
        finally:
            wedging.wedge.set()
            await client.close()

    run(story)
