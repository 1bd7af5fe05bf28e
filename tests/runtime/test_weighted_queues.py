"""Weighted queues in one process (``start(..., global_max_workers=N)``): upstream AWA's tests
of weighted concurrency (``awa/tests/weighted_test.rs``, ``awa-python/tests/
test_start_config.py``) ported to awa's API, and the stories of work-conservation, waiting on
signals under a ManualClock: handlers hold their slot until the test lets them go, and the
test reads the slots when the runtime has nothing left to do."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

import awa
from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import Job as JobRecord
from awa.runtime.runtime import Runtime

from .conftest import Backend, idle_task, memory_clients, run, until

S = awa.JobState


@dataclass
class OnA:
    n: int


@dataclass
class OnB:
    n: int


class Slots:
    """Handlers on queues ``a`` and ``b`` that hold their slot until ``let_go``; counts what
    runs at once, per queue and in all, and the most ever seen."""

    def __init__(self, client: awa.AsyncClient) -> None:
        self.running: Counter[str] = Counter()
        self.most: Counter[str] = Counter()
        self.most_in_all = 0
        self.done: Counter[str] = Counter()
        self._gates = {"a": asyncio.Semaphore(0), "b": asyncio.Semaphore(0)}

        @client.task(OnA, queue="a")
        async def on_a(job: awa.Job[OnA]) -> None:
            await self._hold("a")

        @client.task(OnB, queue="b")
        async def on_b(job: awa.Job[OnB]) -> None:
            await self._hold("b")

    async def _hold(self, queue: str) -> None:
        self.running[queue] += 1
        self.most[queue] = max(self.most[queue], self.running[queue])
        self.most_in_all = max(self.most_in_all, self.running.total())
        await self._gates[queue].acquire()
        self.running[queue] -= 1
        self.done[queue] += 1

    def let_go(self, queue: str, count: int) -> None:
        for _ in range(count):
            self._gates[queue].release()

    def let_all_go(self) -> None:
        self.let_go("a", 10_000)
        self.let_go("b", 10_000)


async def settled(runtime: Runtime, clock: ManualClock) -> None:
    """Until the runtime has nothing to do: no service is running, woken or due."""
    while True:
        await runtime.scheduler.settle()
        await asyncio.sleep(0)
        if not runtime.ready_services(clock.now()):
            await runtime.scheduler.settle()
            if not runtime.ready_services(clock.now()):
                return


def _runtime(client: awa.AsyncClient) -> Runtime:
    assert client.runtime is not None
    return client.runtime


def _queue(name: str, **settings: Any) -> awa.QueueConfig:
    return awa.QueueConfig(queue=name, **settings)


# -- ported from upstream ------------------------------------------------------------------------


def test_start_with_global_max_workers_enters_weighted_mode() -> None:
    """Upstream ``test_global_max_workers``: min_workers and weight with global_max_workers."""

    async def story() -> None:
        _, _, [client] = memory_clients()
        idle_task(client, "cfg_weighted")
        await client.start([_queue("cfg_weighted", min_workers=5, weight=2)], global_max_workers=20)
        shared = _runtime(client).shared
        assert shared is not None
        assert shared.total == 20
        await client.shutdown()

    run(story)


def test_without_global_max_workers_each_queue_keeps_its_own_concurrency() -> None:
    """Upstream ``test_hard_reserved_backward_compat``: ten jobs on a queue of five slots."""

    async def story() -> None:
        clock, _, [client] = memory_clients()
        slots = Slots(client)
        await client.insert_many([OnA(n) for n in range(10)])
        await client.start([("a", 5), ("b", 5)])
        runtime = _runtime(client)
        assert runtime.shared is None
        await until(lambda: slots.running["a"] == 5)
        await settled(runtime, clock)
        assert slots.most["a"] == 5
        slots.let_all_go()
        await until(lambda: slots.done["a"] == 10)
        await client.shutdown()

    run(story)


def test_the_global_cap_is_never_exceeded(backend: Backend) -> None:
    """Upstream ``test_global_cap_not_exceeded``: 20 jobs on each of two queues, min 2 each,
    global 10: never more than 10 at once, and all 40 complete."""

    async def story() -> None:
        clock, _, [client] = backend.clients()
        slots = Slots(client)
        await client.insert_many([OnA(n) for n in range(20)])
        await client.insert_many([OnB(n) for n in range(20)])
        await client.start(
            [_queue("a", min_workers=2), _queue("b", min_workers=2)], global_max_workers=10
        )
        runtime = _runtime(client)
        await until(lambda: slots.running.total() == 10)
        for _ in range(8):  # let some go, wait for the freed slots to be filled again
            await settled(runtime, clock)
            assert slots.most_in_all <= 10
            slots.let_go("a", 2)
            slots.let_go("b", 1)
        slots.let_all_go()
        await until(lambda: slots.done.total() == 40)
        await client.shutdown()
        assert slots.most_in_all <= 10

    run(story)


@pytest.mark.parametrize(
    ("queues", "total", "message"),
    [
        # upstream test_min_workers_exceed_global_rejected
        (
            [_queue("a", min_workers=15), _queue("b", min_workers=10)],
            20,
            "the queues' min_workers add up to 25, more than global_max_workers 20",
        ),
        # upstream test_zero_weight_raises
        (None, 20, "weight must be an integer from 1 to 10000, got 0"),
        ([_queue("a")], 0, "global_max_workers must be an integer from 1 to 10000, got 0"),
        # upstream test_global_max_workers_requires_explicit_queues
        ([], 20, "start needs at least one (queue, concurrency) pair"),
        # not upstream: settings that would do nothing are refused, not ignored
        ([_queue("a", min_workers=2), _queue("b")], None, "queue a: min_workers and weight apply"),
    ],
)
def test_bad_weighted_settings_are_refused_in_one_line(
    queues: list[awa.QueueConfig] | None, total: int | None, message: str
) -> None:
    async def story() -> None:
        _, _, [client] = memory_clients()
        Slots(client)
        with pytest.raises(awa.ValidationError, match=re.escape(message)) as refused:
            await client.start(_or_zero_weight(queues), global_max_workers=total)
        assert "\n" not in str(refused.value)
        assert client.runtime is None

    run(story)


def _or_zero_weight(queues: list[awa.QueueConfig] | None) -> list[awa.QueueConfig]:
    """``queues``, or (``None``) a queue of weight 0, refused as it is made."""
    return [_queue("a", weight=0)] if queues is None else queues


def test_min_workers_above_the_queues_concurrency_is_refused() -> None:
    """Upstream refuses ``max_workers`` with ``min_workers``; here ``concurrency`` stays the
    queue's ceiling in weighted mode, and a floor above it is refused."""
    with pytest.raises(awa.ValidationError, match="queue a: min_workers 5 is more than its"):
        _queue("a", concurrency=4, min_workers=5)


def test_an_idle_queues_share_goes_to_the_loaded_one() -> None:
    """Upstream ``test_idle_overflow_to_loaded_queue``: global 20, min 5 each, 30 jobs on a
    alone: a runs 15 at once (its 5 and the 10 shared), b's 5 stay its own."""

    async def story() -> None:
        clock, _, [client] = memory_clients()
        slots = Slots(client)
        await client.insert_many([OnA(n) for n in range(30)])
        await client.start(
            [_queue("a", min_workers=5), _queue("b", min_workers=5)], global_max_workers=20
        )
        runtime = _runtime(client)
        await until(lambda: slots.running["a"] == 15)
        await settled(runtime, clock)
        assert slots.running["a"] == 15
        slots.let_all_go()
        await until(lambda: slots.done["a"] == 30)
        await client.shutdown()

    run(story)


def test_each_loaded_queue_gets_its_floor_and_an_equal_share() -> None:
    """Upstream ``test_floor_guarantee_under_load``: both queues loaded, min 5 each, global
    20: each reaches at least its 5 (here exactly 10 each, equal weights)."""

    async def story() -> None:
        clock, _, [client] = memory_clients()
        slots = Slots(client)
        await client.insert_many([OnA(n) for n in range(40)])
        await client.insert_many([OnB(n) for n in range(40)])
        await client.start(
            [_queue("a", min_workers=5), _queue("b", min_workers=5)], global_max_workers=20
        )
        await until(lambda: slots.running.total() == 20)
        await settled(_runtime(client), clock)
        assert (slots.running["a"], slots.running["b"]) == (10, 10)
        slots.let_all_go()
        await until(lambda: slots.done.total() == 80)
        await client.shutdown()

    run(story)


def test_shares_follow_the_weights() -> None:
    """Upstream ``test_weight_proportionality``: a weight 3, b weight 1, min 2 each, global
    24: the 20 shared slots go 15 to a and 5 to b, and stay so as handlers come and go."""

    async def story() -> None:
        clock, _, [client] = memory_clients()
        slots = Slots(client)
        await client.insert_many([OnA(n) for n in range(200)])
        await client.insert_many([OnB(n) for n in range(200)])
        await client.start(
            [_queue("a", min_workers=2, weight=3), _queue("b", min_workers=2, weight=1)],
            global_max_workers=24,
        )
        runtime = _runtime(client)
        await until(lambda: slots.running.total() == 24)
        for _ in range(5):
            await settled(runtime, clock)
            assert (slots.running["a"], slots.running["b"]) == (17, 7)
            slots.let_go("a", 6)
            slots.let_go("b", 3)
            await until(lambda: slots.running.total() == 24)
        slots.let_all_go()
        await client.shutdown()

    run(story)


def test_shutdown_leaves_no_job_running_without_a_handler(backend: Backend) -> None:
    """Upstream ``test_permit_before_claim_no_orphans``: every job claimed has a slot, so once
    the worker has stopped, none is left ``running``."""

    async def story() -> None:
        clock, _, [client] = backend.clients()
        slots = Slots(client)
        await client.insert_many([OnA(n) for n in range(30)])
        await client.start([_queue("a", min_workers=3), _queue("b")], global_max_workers=10)
        await until(lambda: slots.running["a"] == 10)
        await settled(_runtime(client), clock)
        slots.let_go("a", 4)
        await until(lambda: slots.done["a"] == 4 and slots.running["a"] == 10)
        await settled(_runtime(client), clock)
        await client.shutdown(timeout=0)  # the 10 running are released, none left running
        states = Counter(job.state for job in await client.list_jobs(limit=100))
        assert states[S.RUNNING] == 0
        assert states[S.COMPLETED] == 4
        assert states[S.RETRYABLE] == 10
        assert states[S.AVAILABLE] == 16

    run(story)


# -- awa's own stories ---------------------------------------------------------------------------


class CountedClaims(MemoryStore):
    """A memory store that records each claim's queue and limit."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock)
        self.claims: list[tuple[str, int]] = []

    def claim(self, queue: str, *, limit: int = 1, **kwargs: Any) -> list[JobRecord]:
        self.claims.append((queue, limit))
        return super().claim(queue, limit=limit, **kwargs)


def test_work_arriving_on_an_idle_queue_takes_its_floor_at_once_and_its_share_as_slots_free() -> (
    None
):
    async def story() -> None:
        clock = ManualClock()
        store = CountedClaims(clock)
        client = awa.AsyncClient(store=store)
        slots = Slots(client)
        await client.insert_many([OnA(n) for n in range(100)])
        await client.start(
            [_queue("a", min_workers=2), _queue("b", min_workers=2)], global_max_workers=10
        )
        runtime = _runtime(client)
        await until(lambda: slots.running["a"] == 8)  # a's 2 and the 6 shared
        await settled(runtime, clock)
        await client.insert_many([OnB(n) for n in range(100)])  # the store says: b has jobs
        await until(lambda: slots.running["b"] == 2)  # b's own, while a still holds 8
        await settled(runtime, clock)
        assert (slots.running["a"], slots.running["b"]) == (8, 2)
        slots.let_go("a", 3)  # the freed shared slots go to b, below its share
        await until(lambda: slots.running["b"] == 5)
        await settled(runtime, clock)
        assert (slots.running["a"], slots.running["b"]) == (5, 5)
        slots.let_all_go()
        await until(lambda: slots.done.total() == 200)
        await client.shutdown()

    run(story)


def test_an_empty_queue_does_not_claim_each_time_a_slot_frees_and_claims_stay_batched() -> None:
    async def story() -> None:
        clock = ManualClock()
        store = CountedClaims(clock)
        client = awa.AsyncClient(store=store)
        slots = Slots(client)
        await client.insert_many([OnA(n) for n in range(60)])
        await client.start([_queue("a"), _queue("b")], global_max_workers=20)
        runtime = _runtime(client)
        await until(lambda: slots.running["a"] == 20)
        await settled(runtime, clock)
        b_claims = [c for c in store.claims if c[0] == "b"]
        assert len(b_claims) == 1  # it looked once, found nothing, gave its share back
        assert max(limit for queue, limit in store.claims if queue == "a") >= 10
        slots.let_go("a", 10)  # ten slots free at once: a claims them in one batch
        await until(lambda: slots.running["a"] == 20)
        await settled(runtime, clock)
        assert [c for c in store.claims if c[0] == "b"] == b_claims
        clock.advance(1.0)  # b's poll interval: it wants slots again, none is free
        await settled(runtime, clock)
        assert [c for c in store.claims if c[0] == "b"] == b_claims
        slots.let_go("a", 2)  # b, below its share, is dealt both; finds nothing; a takes them
        await until(lambda: slots.done["a"] == 12 and slots.running["a"] == 20)
        await settled(runtime, clock)
        assert [c for c in store.claims if c[0] == "b"] == [*b_claims, ("b", 2)]
        slots.let_all_go()
        await until(lambda: slots.done["a"] == 60)
        await client.shutdown()

    run(story)


def test_a_queues_concurrency_stays_its_ceiling_and_pairs_work_with_global_max_workers() -> None:
    """Upstream refuses ``(queue, n)`` pairs in weighted mode; here the pair's number is the
    queue's ceiling, min_workers 0 and weight 1."""

    async def story() -> None:
        clock, _, [client] = memory_clients()
        slots = Slots(client)
        await client.insert_many([OnA(n) for n in range(30)])
        await client.start([("a", 6), ("b", 10)], global_max_workers=12)
        await until(lambda: slots.running["a"] == 6)
        await settled(_runtime(client), clock)
        assert slots.most["a"] == 6
        slots.let_all_go()
        await until(lambda: slots.done["a"] == 30)
        await client.shutdown()

    run(story)


def test_the_sync_client_takes_global_max_workers() -> None:
    clock = ManualClock()
    client = awa.Client(store=MemoryStore(clock))
    idle_task(client.async_client, "a")
    client.start([_queue("a", min_workers=1, weight=2)], global_max_workers=4)
    try:
        assert client.runtime is not None
        assert client.runtime.shared is not None
        assert client.runtime.shared.total == 4
    finally:
        client.shutdown()
