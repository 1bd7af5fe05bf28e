"""Claiming ahead of free slots: with short handlers a worker holds about twice as many claimed
jobs as slots free up during one claim's round trip, starts them as slots free (even while a
claim is on its way), hands back the ones it never started when it shuts down, and never starts
one that was cancelled or rescued meanwhile.

The round trip is simulated: ``RoundTrips`` is a memory store whose claims take 10 ms of the
manual clock, as a claim's trip to a database takes real time (under a plain manual clock a
round trip takes none, so nothing is ever claimed ahead: the simulator's runs are unchanged).
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import awa
from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import Job as JobRecord
from awa.domain import JobState, NewJob
from awa.runtime.attempts import Attempt
from awa.runtime.runtime import Runtime

from .conftest import run, until

ROUND_TRIP_S = 0.01


class RoundTrips(MemoryStore):
    """Claims that take ``ROUND_TRIP_S`` of the store's clock; records each claim's limit."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock, rng=random.Random(5))
        self._trip_clock = clock
        self.limits: list[int] = []

    def claim(self, queue: str, *, limit: int = 1, **kwargs: Any) -> list[JobRecord]:
        self.limits.append(limit)
        self._trip_clock.advance(ROUND_TRIP_S)
        return super().claim(queue, limit=limit, **kwargs)


@dataclass
class Tick:
    n: int


def _insert(store: MemoryStore, count: int) -> Sequence[JobRecord]:
    return store.insert([NewJob(kind="tick", args={"n": n}) for n in range(count)])


def test_short_handlers_are_claimed_ahead_and_every_job_runs_once() -> None:
    async def story() -> None:
        clock = ManualClock()
        store = RoundTrips(clock)
        client = awa.AsyncClient(store=store)
        ran: list[int] = []
        gate = asyncio.Event()

        @client.task(Tick, kind="tick")
        async def tick(job: awa.Job[Tick]) -> None:
            await gate.wait()
            ran.append(job.args.n)
            clock.advance(0.001)  # each handler takes 1 ms

        _insert(store, 400)
        gate.set()
        await client.start([("default", 4)])
        try:
            await until(lambda: len(ran) == 400)
            runtime = client.runtime
            assert runtime is not None
            assert runtime.stats.claimed == 400
            assert runtime.stats.claimed_ahead > 0, "short handlers were never claimed ahead"
            assert max(store.limits) > 4, "no claim asked for more than the free slots"
            assert max(store.limits) <= 8, "claimed further ahead than the concurrency"
        finally:
            await client.shutdown(timeout=1)
        assert sorted(ran) == list(range(400))
        assert store.count_jobs(state=JobState.COMPLETED) == 400

    run(story)


def test_without_claim_ahead_a_claim_asks_only_for_free_slots() -> None:
    async def story() -> None:
        clock = ManualClock()
        store = RoundTrips(clock)
        client = awa.AsyncClient(store=store)
        done: list[int] = []

        @client.task(Tick, kind="tick")
        async def tick(job: awa.Job[Tick]) -> None:
            done.append(job.args.n)
            clock.advance(0.001)

        _insert(store, 100)
        await client.start([awa.QueueConfig(queue="default", concurrency=4, claim_ahead=False)])
        try:
            await until(lambda: len(done) == 100)
            assert client.runtime is not None
            assert client.runtime.stats.claimed_ahead == 0
        finally:
            await client.shutdown(timeout=1)
        assert max(store.limits) <= 4

    run(story)


@dataclass
class BusySlots:
    """A worker at concurrency 4 on 80 jobs whose handlers, once 40 have run (the pace is
    learnt), block until ``release`` is set: the jobs it claimed ahead then stay waiting."""

    clock: ManualClock
    store: RoundTrips
    client: awa.AsyncClient
    release: asyncio.Event
    started: list[int]  # job ids, in the order their handlers started

    @property
    def runtime(self) -> Runtime:
        assert self.client.runtime is not None
        return self.client.runtime

    def held(self) -> list[Attempt]:
        return [a for a in self.runtime.table.attempts() if a.waiting_slot]


async def _busy_slots() -> BusySlots:
    clock = ManualClock()
    store = RoundTrips(clock)
    busy = BusySlots(clock, store, awa.AsyncClient(store=store), asyncio.Event(), [])

    @busy.client.task(Tick, kind="tick")
    async def tick(job: awa.Job[Tick]) -> None:
        busy.started.append(job.id)
        if len(busy.started) > 40:
            await busy.release.wait()
        clock.advance(0.001)

    _insert(store, 80)
    await busy.client.start([("default", 4)])
    try:
        await until(lambda: busy.runtime.table.waiting("default") > 0)
    except AssertionError:
        busy.release.set()
        await busy.client.shutdown(timeout=1)
        raise
    return busy


def test_shutdown_hands_back_jobs_claimed_ahead_without_spending_their_attempt() -> None:
    async def story() -> None:
        busy = await _busy_slots()
        try:
            held = [a.lease.job_id for a in busy.held()]
        finally:
            busy.release.set()
            await busy.client.shutdown(timeout=1)
        handed_back = [job_id for job_id in held if job_id not in busy.started]
        assert handed_back, "every job held ahead was started before the shutdown"
        for job_id in handed_back:
            after = busy.store.get_job(job_id)
            assert after.state is JobState.SCHEDULED
            assert after.attempt == 0, "a job that never ran had its attempt spent"
            assert after.errors == ()
            assert after.run_at <= busy.clock.now()  # due at once: the next promotion frees it

    run(story)


def test_a_job_cancelled_while_claimed_ahead_never_starts() -> None:
    async def story() -> None:
        busy = await _busy_slots()
        try:
            [victim] = busy.held()[:1]
            await busy.client.cancel(victim.lease.job_id)
            await until(lambda: victim.ended)  # the cancel hint reached the attempt
            busy.release.set()
            await until(lambda: busy.store.count_jobs(state=JobState.COMPLETED) == 79)
        finally:
            busy.release.set()  # a failed step must not leave handlers blocked through shutdown
            await busy.client.shutdown(timeout=1)
        assert victim.lease.job_id not in busy.started
        assert busy.store.get_job(victim.lease.job_id).state is JobState.CANCELLED

    run(story)


def test_an_attempt_that_loses_its_job_before_its_task_starts_frees_its_slot() -> None:
    """A cancel hint can land between a handler task's creation and its first step (a job
    claimed ahead starts as a slot frees while the hint is on its way); a task cancelled then
    would never run its body, so the attempt is left to start, sees it ended, and leaves."""

    async def story() -> None:
        clock = ManualClock()
        store = MemoryStore(clock, rng=random.Random(5))
        client = awa.AsyncClient(store=store)
        ran: list[int] = []

        @client.task(Tick, kind="tick")
        async def tick(job: awa.Job[Tick]) -> None:
            ran.append(job.id)

        await client.start([("default", 1)])  # nothing inserted yet: it claims nothing
        runtime = client.runtime
        assert runtime is not None
        try:
            _insert(store, 1)
            [record] = store.claim("default", limit=1)
            config = awa.QueueConfig(queue="default", concurrency=1)
            attempt = runtime.dispatch.start(config, record, clock.now())
            attempt.end(cancelled=True)  # before the loop gives the task its first step
            await until(lambda: not runtime.table.attempts(), timeout_s=2)
            assert runtime.table.running("default") == 0
        finally:
            await client.shutdown(timeout=0)  # waits for no handler: a leaked slot fails above
        assert ran == []

    run(story)


class GatedClaims(RoundTrips):
    """Claims that, once ``close()`` is called, wait on their store thread until ``open()``:
    a claim whose round trip lasts as long as a test needs."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self._gate = threading.Event()
        self._gate.set()
        self.blocked = threading.Event()  # a claim is waiting at the closed gate

    def close(self) -> None:
        self._gate.clear()

    def open(self) -> None:
        self._gate.set()

    def claim(self, queue: str, *, limit: int = 1, **kwargs: Any) -> list[JobRecord]:
        if not self._gate.is_set():
            self.blocked.set()
            self._gate.wait()
        return super().claim(queue, limit=limit, **kwargs)


def test_a_freed_slot_takes_a_job_claimed_ahead_while_a_claim_is_on_its_way() -> None:
    """The claim service is busy for a whole round trip; a slot freed meanwhile does not wait
    for it to come back when a job claimed ahead is ready."""

    async def story() -> None:
        clock = ManualClock()
        store = GatedClaims(clock)
        client = awa.AsyncClient(store=store)
        started: list[int] = []
        permits = asyncio.Semaphore(0)  # once 40 have run, each handler waits for a permit

        @client.task(Tick, kind="tick")
        async def tick(job: awa.Job[Tick]) -> None:
            started.append(job.id)
            if len(started) > 40:
                await permits.acquire()
            clock.advance(0.001)

        _insert(store, 200)
        await client.start([("default", 4)])
        runtime = client.runtime
        assert runtime is not None
        try:
            # 40 ran, 4 hold the slots, and jobs claimed ahead wait behind them
            await until(lambda: len(started) == 44 and runtime.table.waiting("default") >= 2)
            store.close()
            permits.release()  # a slot frees: a waiting job takes it, a claim sets off
            await until(store.blocked.is_set)
            before = len(started)
            assert runtime.table.waiting("default") >= 1
            permits.release()  # another slot frees while that claim is on its way
            await until(lambda: len(started) == before + 1)
            assert store.blocked.is_set()
        finally:
            store.open()
            for _ in range(200):
                permits.release()
            await client.shutdown(timeout=1)

    run(story)
