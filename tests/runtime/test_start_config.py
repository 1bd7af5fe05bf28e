"""``start()``'s queue configuration as upstream AWA's Python SDK gives it: upstream's
``awa-python/tests/test_start_config.py`` ported to awa's API, each asserting what the setting
does (a job runs, a setting is stored, a claim is bounded), and its ordering-key insert-path
tests (``test_ordering_key_routes_all_async_python_insert_paths`` in ``test_awa.py`` and the
sync one in ``test_sync.py``) on every insert path awa's clients have.

Not ported, with the reason:

- ``test_partitioned_queue_configs_expand_and_dispatch``,
  ``test_duplicate_partitioned_queue_queue_config_is_rejected``: partitioned queues are
  upstream's queue-storage feature, not awa's (a queue listed twice is refused, tested in
  ``test_weighted_queues.py``);
- ``test_retention_kwargs_accepted``, ``test_maintenance_interval_kwargs_accepted``: awa's
  process-wide retention and maintenance cadence are ``RuntimeConfig`` fields, not ``start``
  keywords; per-queue retention (the dict's ``retention``) is ported below;
- ``test_default_start_on_fresh_install_auto_finalizes_to_queue_storage``,
  ``test_default_start_with_canonical_backlog_stays_canonical``,
  ``test_invalid_storage_transition_role_raises``,
  ``test_queue_storage_target_role_executes_after_mixed_transition``,
  ``test_install_queue_storage_rejected_while_runtime_is_running``,
  ``test_queue_storage_claim_ring_knobs_validate``: upstream's storage transition and
  queue-storage engine, which awa does not have;
- in the ordering-key tests, the ``enqueue_shard`` read-back and ``insert_many_copy`` /
  ``enqueue_many_copy``: queue-storage shards; awa's bulk path is ``insert_many`` (PostgreSQL
  routes a large batch to COPY itself), covered below.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

import awa
from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import Job as JobRecord
from awa.domain.flow import RateLimit
from awa.ports import ClaimStore
from awa.runtime.config import RuntimeConfig
from awa.runtime.observe import Observer
from awa.runtime.runtime import Runtime

from .conftest import Backend, idle_task, memory_clients, run, until

S = awa.JobState


@dataclass
class Work:
    n: int


class Held:
    """A task on ``queue`` whose handlers hold their slot until ``let_go``; counts what runs
    at once, the most ever seen, and what is done."""

    def __init__(self, client: awa.AsyncClient, queue: str, kind: str | None = None) -> None:
        self.running = 0
        self.most = 0
        self.done = 0
        self.seen: list[JobRecord] = []
        self._gate = asyncio.Semaphore(0)

        @client.task(Work, queue=queue, kind=kind)
        async def hold(job: awa.Job[Work]) -> None:
            self.running += 1
            self.most = max(self.most, self.running)
            await self._gate.acquire()
            self.running -= 1
            self.done += 1

    def let_go(self, count: int = 10_000) -> None:
        for _ in range(count):
            self._gate.release()


def _runtime(client: awa.AsyncClient) -> Runtime:
    assert client.runtime is not None
    return client.runtime


async def _stored(client: awa.AsyncClient, queue: str) -> Any:
    [stats] = [s for s in await client.queue_stats() if s.queue == queue]
    return stats


async def _refused(client: awa.AsyncClient, queues: Any, message: str, **settings: Any) -> None:
    """``start`` refuses with one ``ValidationError`` line and starts nothing."""
    with pytest.raises(awa.ValidationError, match=re.escape(message)) as refused:
        await client.start(queues, **settings)
    assert "\n" not in str(refused.value)
    assert client.runtime is None


# -- QueueConfig's upstream spelling --------------------------------------------------------------


def test_queue_config_takes_the_queue_positionally_and_max_workers_as_concurrency() -> None:
    config = awa.QueueConfig("api", max_workers=20, min_workers=2, weight=3)
    assert config == awa.QueueConfig(queue="api", concurrency=20, min_workers=2, weight=3)
    assert (config.concurrency, config.max_workers) == (20, 20)
    assert awa.QueueConfig("api", concurrency=7, max_workers=7).concurrency == 7
    assert awa.QueueConfig("api").concurrency == 100
    with pytest.raises(awa.ValidationError, match="give concurrency or max_workers"):
        awa.QueueConfig("api", concurrency=7, max_workers=8)
    with pytest.raises(awa.ValidationError, match="concurrency must be an integer"):
        awa.QueueConfig("api", max_workers=0)


# -- ported from upstream ------------------------------------------------------------------------


def test_tuple_form_backward_compat(backend: Backend) -> None:
    """Upstream ``test_tuple_form_backward_compat``: ``start([(q, 10)])`` runs the queue."""

    async def story() -> None:
        _, _, [client] = backend.clients()
        ran: list[int] = []

        @client.task(Work, queue="cfg_tuple_compat")
        async def handle(job: awa.Job[Work]) -> None:
            ran.append(job.args.n)

        await client.start([("cfg_tuple_compat", 10)])
        assert _runtime(client).queues["cfg_tuple_compat"].concurrency == 10
        job = await client.insert(Work(1))
        await until(lambda: ran == [1])
        await until(lambda: _state(client, job.id, S.COMPLETED))
        await client.shutdown()

    run(story)


async def _state(client: awa.AsyncClient, job_id: int, state: awa.JobState) -> bool:
    return (await client.get_job(job_id)).state is state


def test_dict_config_with_rate_limit_stores_it_with_the_queue(backend: Backend) -> None:
    """Upstream ``test_dict_config_with_rate_limit``: the rate is stored with the queue (for
    every process) when the worker starts, and its jobs run."""

    async def story() -> None:
        _, _, [client] = backend.clients()
        held = Held(client, "cfg_dict_rl")
        await client.insert_many([Work(n) for n in range(3)])
        await client.start([{"name": "cfg_dict_rl", "max_workers": 10, "rate_limit": (100.0, 100)}])
        assert _runtime(client).queues["cfg_dict_rl"].concurrency == 10
        stats = await _stored(client, "cfg_dict_rl")
        assert stats.rate_limit == RateLimit(100.0, 100)
        await until(lambda: held.running == 3)
        held.let_go()
        await until(lambda: held.done == 3)
        await client.shutdown()

    run(story)


def test_a_queue_config_stores_its_concurrency_limit_and_leaves_unset_settings_alone(
    backend: Backend,
) -> None:
    """``concurrency_limit`` goes the same way; a setting not given leaves the stored one as
    it is (the rate an operator set earlier stays)."""

    async def story() -> None:
        _, _, [client] = backend.clients()
        idle_task(client, "cfg_limits")
        await client.configure_queue("cfg_limits", rate_limit=(5.0, 2))
        await client.start([awa.QueueConfig("cfg_limits", concurrency_limit=3)])
        stats = await _stored(client, "cfg_limits")
        assert (stats.concurrency_limit, stats.rate_limit) == (3, RateLimit(5.0, 2))
        await client.shutdown()

    run(story)


@pytest.mark.parametrize(
    ("rate", "message"),
    [
        ("fast", "queue cfg_bad_rl: rate_limit is (per_second, burst) or None, got 'fast'"),
        ((float("nan"), 10), "queue cfg_bad_rl: rate_limit per_second must be a number"),
        ((10.0, 0), "queue cfg_bad_rl: rate_limit burst must be an integer from 1"),
        ((10.0, 1.5), "queue cfg_bad_rl: rate_limit burst must be an integer from 1"),
    ],
)
def test_rate_limit_wrong_type_raises(rate: object, message: str) -> None:
    """Upstream ``test_rate_limit_wrong_type_raises`` (a ``TypeError`` there): one
    ``ValidationError`` line naming the key, nothing started, nothing stored."""

    async def story() -> None:
        _, _, [client] = memory_clients()
        idle_task(client, "cfg_bad_rl")
        await _refused(
            client, [{"name": "cfg_bad_rl", "max_workers": 10, "rate_limit": rate}], message
        )
        assert [s.queue for s in await client.queue_stats()] == []

    run(story)


def test_a_bad_rate_limit_in_a_queue_config_is_refused_as_it_is_made() -> None:
    with pytest.raises(awa.ValidationError, match="rate_limit burst must be an integer"):
        awa.QueueConfig("api", rate_limit=(1.0, 0))


def test_global_max_workers(backend: Backend) -> None:
    """Upstream ``test_global_max_workers``: the dict's min_workers and weight with
    global_max_workers share 20 slots; the queue alone with work takes them all."""

    async def story() -> None:
        _, _, [client] = backend.clients()
        held = Held(client, "cfg_weighted")
        await client.insert_many([Work(n) for n in range(30)])
        await client.start(
            [{"name": "cfg_weighted", "min_workers": 5, "weight": 2}], global_max_workers=20
        )
        runtime = _runtime(client)
        assert runtime.shared is not None
        assert runtime.shared.total == 20
        config = runtime.queues["cfg_weighted"]
        assert (config.min_workers, config.weight) == (5, 2)
        await until(lambda: held.running == 20)
        held.let_go()
        await until(lambda: held.done == 30)
        assert held.most == 20
        await client.shutdown()

    run(story)


def test_tuple_plus_global_max_workers_is_the_queues_ceiling() -> None:
    """Upstream ``test_tuple_plus_global_max_workers_raises`` refuses ``(q, 10)`` with
    global_max_workers. awa keeps what it documents and tests (``docs/weighted-queues.md``,
    ``test_weighted_queues.py``): the pair's number is the queue's ceiling in the shared
    slots, min_workers 0 and weight 1."""

    async def story() -> None:
        _, _, [client] = memory_clients()
        held = Held(client, "cfg_tuple_global")
        await client.insert_many([Work(n) for n in range(15)])
        await client.start([("cfg_tuple_global", 10)], global_max_workers=20)
        await until(lambda: held.running == 10)
        held.let_go()
        await until(lambda: held.done == 15)
        assert held.most == 10
        await client.shutdown()

    run(story)


def test_both_max_and_min_workers() -> None:
    """Upstream ``test_both_max_and_min_workers_raises`` refuses max_workers with
    min_workers. In awa's model max_workers is the queue's ceiling and pairs with
    global_max_workers, so the two together are accepted there; min_workers without
    global_max_workers would do nothing, and is refused as such."""

    async def story() -> None:
        _, _, [client] = memory_clients()
        held = Held(client, "cfg_both")
        both = [{"name": "cfg_both", "max_workers": 10, "min_workers": 5}]
        await _refused(client, both, "queue cfg_both: min_workers and weight apply only with")
        await client.insert_many([Work(n) for n in range(12)])
        await client.start(both, global_max_workers=20)
        await until(lambda: held.running == 10)  # its ceiling, not the 20 it could share
        held.let_go()
        await until(lambda: held.done == 12)
        assert held.most == 10
        await client.shutdown()

    run(story)


@pytest.mark.parametrize(
    ("queues", "settings", "message"),
    [
        # upstream test_zero_weight_raises
        (
            [{"name": "cfg_q", "max_workers": 10, "weight": 0}],
            {},
            "queue cfg_q: weight must be an integer from 1 to 10000, got 0",
        ),
        # upstream test_global_max_workers_requires_explicit_queues
        ([], {"global_max_workers": 20}, "start needs at least one (queue, concurrency) pair"),
        # upstream test_dict_missing_name_raises
        ([{"max_workers": 10}], {}, "a queue config dict needs a 'name', got keys ['max_workers']"),
        ([{"name": "Bad Name"}], {}, "queue config 'name': invalid queue name 'Bad Name'"),
        ([{"name": "cfg_q", "maxworkers": 10}], {}, "queue cfg_q: unknown key 'maxworkers'"),
        ([{"name": "cfg_q", "max_workers": "10"}], {}, "queue cfg_q: max_workers: concurrency"),
        (
            [{"name": "cfg_q", "deadline_duration_ms": -1}],
            {},
            "queue cfg_q: deadline_duration_ms: deadline_duration must be >= 0",
        ),
        (
            [{"name": "cfg_q", "retention": {"completed_days": 1}}],
            {},
            "queue cfg_q: retention: unknown key 'completed_days'",
        ),
        (
            [{"name": "cfg_q", "retention": 24}],
            {},
            "queue cfg_q: retention is a dict of completed_hours and/or failed_hours, got 24",
        ),
        # upstream test_per_queue_invalid_claimer_knobs_raise
        ([{"name": "cfg_q", "claimers": 0}], {}, "queue cfg_q: claimers must be an integer"),
        ([{"name": "cfg_q", "claimers": 2.0}], {}, "queue cfg_q: claimers must be an integer"),
        ([{"name": "cfg_q", "claimers": -1}], {}, "queue cfg_q: claimers must be an integer"),
        (
            [{"name": "cfg_q", "claim_batch_size": 0}],
            {},
            "queue cfg_q: claim_batch_size must be an integer from 1 to 5000, got 0",
        ),
        (
            [{"name": "cfg_q", "claim_batch_size": True}],
            {},
            "queue cfg_q: claim_batch_size must be an integer",
        ),
        (["cfg_q"], {}, "queues are (name, concurrency) pairs, QueueConfig values or dicts"),
    ],
)
def test_bad_queue_configs_are_refused_in_one_line(
    queues: list[Any], settings: dict[str, Any], message: str
) -> None:
    async def story() -> None:
        _, _, [client] = memory_clients()
        idle_task(client, "cfg_q")
        await _refused(client, queues, message, **settings)

    run(story)


def test_per_queue_priority_aging_and_deadline_in_dict_config(backend: Backend) -> None:
    """Upstream ``test_per_queue_priority_aging_and_deadline_in_dict_config`` and
    ``test_per_queue_aging_zero_disables_escalation``: the ms are the queue's seconds, the
    claimed attempt's deadline is 60 s after its start, and 0 gives it none."""

    async def story() -> None:
        _, _, [client] = backend.clients()
        held = Held(client, "cfg_aging")
        second = Held(client, "cfg_strict", kind="strict")
        await client.start(
            [
                {
                    "name": "cfg_aging",
                    "max_workers": 4,
                    "priority_aging_interval_ms": 30_000,
                    "deadline_duration_ms": 60_000,
                },
                {
                    "name": "cfg_strict",
                    "max_workers": 4,
                    "priority_aging_interval_ms": 0,
                    "deadline_duration_ms": 0,
                },
            ],
            deadline_duration=120.0,  # a dict's own key wins over start's keyword
        )
        queues = _runtime(client).queues
        aging, strict = queues["cfg_aging"], queues["cfg_strict"]
        assert (aging.priority_aging_interval_s, aging.deadline_duration_s) == (30.0, 60.0)
        assert (strict.priority_aging_interval_s, strict.deadline_duration_s) == (0.0, 0.0)
        job = await client.insert(Work(1), queue="cfg_aging")
        strict_job = await client.insert(Work(2), kind="strict", queue="cfg_strict")
        await until(lambda: held.running == 1 and second.running == 1)
        running = await client.get_job(job.id)
        assert running.attempted_at is not None
        assert running.deadline_at is not None
        assert (running.deadline_at - running.attempted_at).total_seconds() == 60.0
        assert (await client.get_job(strict_job.id)).deadline_at is None
        held.let_go()
        second.let_go()
        await until(lambda: held.done == 1 and second.done == 1)
        await client.shutdown()

    run(story)


def test_per_queue_retention_in_dict_config(backend: Backend) -> None:
    """Upstream ``test_per_queue_retention_in_dict_config``: the hours are stored with the
    queue as its own retention, in seconds."""

    async def story() -> None:
        _, _, [client] = backend.clients()
        idle_task(client, "cfg_retention")
        await client.start(
            [
                {
                    "name": "cfg_retention",
                    "max_workers": 5,
                    "retention": {"completed_hours": 1, "failed_hours": 168},
                }
            ]
        )
        stats = await _stored(client, "cfg_retention")
        assert (stats.finished_retention_s, stats.failed_retention_s) == (3600.0, 168 * 3600.0)
        assert stats.dlq_retention_s is None
        await client.shutdown()

    run(story)


# -- the claim knobs: claim_batch_size and claimers ----------------------------------------------


class GatedClaims:
    """A store whose claims wait (in the store's threads) until ``overlap`` claims are in
    flight at once, or a real second has passed; it records each claim's limit, the most
    claims in flight together, and at each claim's start whether what the claims in flight
    asked for, with the jobs running in the store, fits in ``slots``. Every other call goes
    to the store it wraps."""

    def __init__(self, inner: ClaimStore, *, overlap: int, slots: int) -> None:
        self._inner = inner
        self._overlap = overlap
        self._slots = slots
        self._lock = threading.Condition()
        self._in_flight: list[int] = []
        self.limits: list[int] = []
        self.most_in_flight = 0
        self.over_claimed: list[tuple[int, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def claim(self, queue: str, *, limit: int = 1, **kwargs: Any) -> list[JobRecord]:
        running = self._inner.count_jobs(state=S.RUNNING, queue=queue)
        with self._lock:
            self.limits.append(limit)
            self._in_flight.append(limit)
            self.most_in_flight = max(self.most_in_flight, len(self._in_flight))
            if running + sum(self._in_flight) > self._slots:
                self.over_claimed.append((running, sum(self._in_flight)))
            self._lock.notify_all()
            self._lock.wait_for(lambda: len(self._in_flight) >= self._overlap, timeout=1.0)
        try:
            return self._inner.claim(queue, limit=limit, **kwargs)
        finally:
            with self._lock:
                self._in_flight.remove(limit)


def test_claim_batch_size_bounds_each_claim_under_the_process_bound() -> None:
    async def story() -> None:
        clock = ManualClock()
        store = GatedClaims(MemoryStore(clock), overlap=1, slots=20)
        client = awa.AsyncClient(store=store)  # type: ignore[arg-type]
        held = Held(client, "cfg_batch")
        await client.insert_many([Work(n) for n in range(40)])
        await client.start([awa.QueueConfig("cfg_batch", max_workers=20, claim_batch_size=5)])
        await until(lambda: held.running == 20)
        assert store.limits[:4] == [5, 5, 5, 5]  # 20 free slots, five a claim
        held.let_go()
        await until(lambda: held.done == 40)
        await client.shutdown()
        assert max(store.limits) == 5
        # the process-wide claim_batch_max below the queue's: the smaller bounds the claim
        client = awa.AsyncClient(store=store)  # type: ignore[arg-type]
        held = Held(client, "cfg_batch")
        store.limits.clear()
        await client.insert_many([Work(n) for n in range(10)])
        await client.start(
            [awa.QueueConfig("cfg_batch", max_workers=20, claim_batch_size=5)],
            runtime_config=RuntimeConfig(claim_batch_max=3),
        )
        await until(lambda: held.running == 10)
        held.let_go()
        await until(lambda: held.done == 10)
        await client.shutdown()
        assert max(store.limits) == 3

    run(story)


def test_claimers_overlap_and_never_ask_for_more_than_the_free_slots(backend: Backend) -> None:
    """Upstream ``test_per_queue_claimer_knobs_in_dict_config``: three claimers of two jobs
    each on a queue of 8 slots. Their claims are in flight together (the store holds each
    until the others arrive), and at no claim's start do the claims in flight ask for more
    than the slots the running jobs leave: every job claimed starts at once."""

    async def story() -> None:
        clock = ManualClock()
        store = GatedClaims(backend.store(clock), overlap=3, slots=8)
        client = awa.AsyncClient(store=store)  # type: ignore[arg-type]
        held = Held(client, "cfg_claimers")
        await client.insert_many([Work(n) for n in range(30)])
        await client.start(
            [{"name": "cfg_claimers", "max_workers": 8, "claimers": 3, "claim_batch_size": 2}],
            runtime_config=RuntimeConfig(run_maintenance=False),
        )
        runtime = _runtime(client)
        assert len([n for n in runtime.succeeded_at() if n.startswith("claim:")]) == 3
        await until(lambda: held.running == 8)
        assert store.most_in_flight == 3
        assert store.limits[:3] == [2, 2, 2]
        assert store.over_claimed == []
        running = await client.count_jobs(state=S.RUNNING, queue="cfg_claimers")
        assert running == 8  # none claimed that waits for a slot
        held.let_go()
        await until(lambda: held.done == 30)
        await client.shutdown()
        assert held.most == 8
        assert runtime.stats.claimed == 30
        assert runtime.stats.claimed_ahead == 0
        assert max(store.limits) == 2

    run(story)


def test_a_claimer_with_nothing_left_to_ask_for_does_not_claim() -> None:
    """Four claimers, but one claim can ask for all 8 free slots: the others, woken with it,
    find the slots asked for and send nothing."""

    async def story() -> None:
        clock = ManualClock()
        store = GatedClaims(MemoryStore(clock), overlap=1, slots=8)
        client = awa.AsyncClient(store=store)  # type: ignore[arg-type]
        held = Held(client, "cfg_one")
        await client.insert_many([Work(n) for n in range(8)])
        await client.start([awa.QueueConfig("cfg_one", max_workers=8, claimers=4)])
        await until(lambda: held.running == 8)
        await asyncio.sleep(0.05)  # the other claimers' runs come and go
        assert store.limits == [8]
        assert store.over_claimed == []
        held.let_go()
        await until(lambda: held.done == 8)
        await client.shutdown()

    run(story)


def test_claimers_on_a_limited_queue_stay_within_its_fleet_limit(backend: Backend) -> None:
    """A queue with a fleet-wide concurrency_limit (on PostgreSQL its claims serialise on
    the queue's row): several claimers are correct, never more than the limit live."""

    async def story() -> None:
        _, _, [client] = backend.clients()
        held = Held(client, "cfg_limited")
        await client.insert_many([Work(n) for n in range(12)])
        await client.start(
            [awa.QueueConfig("cfg_limited", max_workers=10, claimers=3, concurrency_limit=3)]
        )
        await until(lambda: held.running == 3)
        await asyncio.sleep(0.05)
        assert held.running == 3
        for _ in range(4):
            held.let_go(3)
            await until(lambda: held.running == 3 or held.done == 12)
        await until(lambda: held.done == 12)
        assert held.most == 3
        await client.shutdown()

    run(story)


# -- ordering_key on every insert path -----------------------------------------------------------


def _keys(jobs: list[JobRecord]) -> Counter[tuple[str | None, str | None]]:
    return Counter((job.ordering_key, job.concurrency_key) for job in jobs)


def test_ordering_key_routes_all_async_insert_paths(backend: Backend) -> None:
    """Upstream ``test_ordering_key_routes_all_async_python_insert_paths``: the key, as text
    or as UTF-8 bytes, survives ``insert``, ``insert_many`` of ``InsertSpec`` items (a small
    batch and one large enough for PostgreSQL's bulk route) and, on PostgreSQL, an insert on
    the caller's own connection."""

    async def story() -> None:
        _, _, [client] = backend.clients()
        idle_task(client, "py_ordering_key")
        made = [
            await client.insert(Work(1), queue="py_ordering_key", ordering_key=b"account-42"),
            await client.insert(Work(2), queue="py_ordering_key", ordering_key="account-42"),
        ]
        made += await client.insert_many(
            [awa.InsertSpec(args=Work(3), ordering_key=b"account-42", concurrency_key=b"t-1")]
        )
        ids = await client.insert_many(
            [awa.InsertSpec(args=Work(n), ordering_key=b"account-42") for n in range(300)],
            returning="ids",
        )
        if backend.name == "postgres":
            url = backend._request.getfixturevalue("pg_clean_url")
            async with await psycopg.AsyncConnection.connect(url) as conn:
                made.append(await client.insert(Work(4), ordering_key=b"account-42", conn=conn))
                await conn.commit()
        stored = [await client.get_job(job.id) for job in made]
        stored += [await client.get_job(job_id) for job_id in ids]
        assert _keys(stored) == {
            ("account-42", None): len(stored) - 1,
            ("account-42", "t-1"): 1,
        }
        with pytest.raises(awa.ValidationError, match="ordering_key bytes must be UTF-8") as bad:
            await client.insert(Work(5), ordering_key=b"\xff\xfe")
        assert "\n" not in str(bad.value)
        with pytest.raises(awa.ValidationError, match="item 1: concurrency_key bytes"):
            await client.insert_many(
                [
                    awa.InsertSpec(args=Work(6)),
                    awa.InsertSpec(args=Work(7), concurrency_key=b"\x80"),
                ]
            )
        assert await client.count_jobs() == len(stored)  # the refused batch wrote nothing

    run(story)


def test_ordering_key_routes_all_sync_insert_paths(backend: Backend) -> None:
    """Upstream's sync ordering-key test: the same on ``awa.Client``, with a psycopg
    connection of the caller's on PostgreSQL."""
    clock = ManualClock()
    client = awa.Client(store=backend.store(clock))
    made = [
        client.insert(Work(1), queue="py_ordering_key", ordering_key=b"account-42"),
        *client.insert_many(
            [awa.InsertSpec(args=Work(2), queue="py_ordering_key", ordering_key=b"account-42")]
        ),
    ]
    ids = client.insert_many(
        [awa.InsertSpec(args=Work(n), ordering_key="account-42") for n in range(300)],
        returning="ids",
    )
    if backend.name == "postgres":
        with psycopg.connect(backend._request.getfixturevalue("pg_clean_url")) as conn:
            made.append(client.insert(Work(3), ordering_key=b"account-42", conn=conn))
            conn.commit()
    stored = [client.get_job(job.id) for job in made] + [client.get_job(i) for i in ids]
    assert {job.ordering_key for job in stored} == {"account-42"}
    with pytest.raises(awa.ValidationError, match="ordering_key bytes must be UTF-8"):
        client.insert(Work(4), ordering_key=b"\xc3")
    assert client.count_jobs() == len(stored)


class HeldBack(Observer):
    """Counts the jobs claims of a queue left waiting for its rate."""

    def __init__(self) -> None:
        self.by_rate = 0

    def claims_held_back(self, queue: str, held: Mapping[str, int]) -> None:
        self.by_rate += held.get("rate", 0)


def test_a_rate_stored_again_at_start_keeps_its_bucket(backend: Backend) -> None:
    """A rate stored again starts a full bucket (``configure_queue``); a worker that starts
    with the rate the queue already has stores nothing, so a fleet's restarts do not let a
    burst through each. The clock never moves: the one bucket holds 2 tokens in all."""

    async def story() -> None:
        _, _, [first, second] = backend.clients(2)
        held_first = Held(first, "cfg_rate_again")
        held_second = Held(second, "cfg_rate_again")
        await first.insert_many([Work(n) for n in range(5)])
        config = [awa.QueueConfig("cfg_rate_again", rate_limit=(1.0, 2))]
        await first.start(config)
        await until(lambda: held_first.running == 2)  # the burst
        held_first.let_go()
        await until(lambda: held_first.done == 2)
        await first.shutdown()
        heard = HeldBack()
        await second.start(config, observers=[heard])
        await until(lambda: heard.by_rate > 0)  # a claim found the bucket still empty
        stats = await _stored(second, "cfg_rate_again")
        held_second.let_go()  # (a refilled bucket would have started 2: let them end)
        await second.shutdown()
        assert (stats.counts.get(S.RUNNING, 0), stats.counts.get(S.AVAILABLE, 0)) == (0, 3)
        assert stats.rate_limit == RateLimit(1.0, 2)

    run(story)
