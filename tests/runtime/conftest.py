"""Runtime stories under a ManualClock, no real sleeps for time, on every backend: the
``backend`` fixture runs each story on the memory store, on SQLite (a file in the test's
temporary directory) and on PostgreSQL (a store with the manual clock injected, on the
session's database emptied for the test)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

import awa
from awa.adapters.memory import ManualClock, MemoryStore
from awa.ports import ClaimStore

T = TypeVar("T")


@dataclass
class Idle:
    """Args of a task nothing is inserted for."""


def idle_task(client: awa.AsyncClient, queue: str = "default") -> None:
    """Give ``client`` a task on ``queue`` that never runs: its worker works the queue (a
    worker refuses a queue that is no task's) and claims nothing there but what a test puts."""

    @client.task(Idle, queue=queue)
    async def idle(job: awa.Job[Idle]) -> None:
        raise AssertionError("no Idle job is ever inserted")


REAL_TIMEOUT_S = 10.0


async def until(
    condition: Callable[[], Awaitable[bool] | bool], timeout_s: float = REAL_TIMEOUT_S
) -> None:
    """Yield to the runtime until ``condition`` holds; fail after ``timeout_s`` real seconds.
    This waits on a condition, never for an amount of (simulated) time."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + timeout_s
    while True:
        result = condition()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if loop.time() > give_up:
            raise AssertionError(f"condition not reached within {timeout_s}s")
        await asyncio.sleep(0.0005)


async def advance_until(
    clock: ManualClock,
    condition: Callable[[], Awaitable[bool] | bool],
    *,
    step_s: float,
    steps_max: int = 20,
) -> None:
    """Let simulated time pass in steps until ``condition`` holds, giving the runtime a moment
    of real time to react after each step."""
    for _ in range(steps_max):
        try:
            await until(condition, timeout_s=0.2)
            return
        except AssertionError:
            clock.advance(step_s)
    await until(condition)


async def state_of(client: awa.AsyncClient, job_id: int) -> awa.JobState:
    return (await client.get_job(job_id)).state


async def reaches(
    client: awa.AsyncClient,
    job_id: int,
    state: awa.JobState,
    *,
    timeout_s: float = REAL_TIMEOUT_S,
) -> awa.JobRecord:
    async def check() -> bool:
        return await state_of(client, job_id) is state

    await until(check, timeout_s)
    return await client.get_job(job_id)


def memory_clients(
    count: int = 1, **_: Any
) -> tuple[ManualClock, MemoryStore, list[awa.AsyncClient]]:
    clock = ManualClock()
    store = MemoryStore(clock, rng=random.Random(5))
    return clock, store, [awa.AsyncClient(store=store) for _ in range(count)]


class Backend:
    """Builds a story's clients on one backend: ``clients(count)`` gives the clock, the store
    they share (as several worker processes share a database) and the clients."""

    def __init__(self, name: str, request: pytest.FixtureRequest) -> None:
        self.name = name
        self._request = request
        self._close: list[Callable[[], None]] = []

    def store(self, clock: ManualClock) -> ClaimStore:
        if self.name == "memory":
            return MemoryStore(clock, rng=random.Random(5))
        if self.name == "sqlite":
            from awa.adapters.sqlite import SqliteStore

            folder = self._request.getfixturevalue("tmp_path")
            made = SqliteStore(str(folder / "jobs.db"), clock=clock, rng=random.Random(5))
            self._close.append(made.close)
            return made
        from awa.adapters.postgres import PostgresStore

        url = self._request.getfixturevalue("pg_clean_url")
        store = PostgresStore(url, clock=clock, rng=random.Random(5))
        self._close.append(store.close)
        return store

    def clients(self, count: int = 1) -> tuple[ManualClock, ClaimStore, list[awa.AsyncClient]]:
        clock = ManualClock()
        store = self.store(clock)
        return clock, store, [awa.AsyncClient(store=store) for _ in range(count)]

    def close(self) -> None:
        for close in self._close:
            close()


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    chosen = Backend(str(request.param), request)
    yield chosen
    chosen.close()


def run(story: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(story())  # type: ignore[arg-type]
