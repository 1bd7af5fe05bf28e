"""``awa.AsyncClient``: insert, run and manage jobs from asyncio code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from awa.client import producing
from awa.client.async_verbs import AsyncVerbs
from awa.client.calls import produces_async
from awa.client.declarations import Declarations
from awa.client.producing import Batch
from awa.client.requests import Requests
from awa.client.store_access import (
    QueueSpec,
    StoreAccess,
    check_max_args_bytes,
    open_client_store,
    queue_configs,
)
from awa.domain import Job as JobRecord
from awa.domain import (
    Schedule,
    ValidationError,
)
from awa.domain.defaults import (
    DEADLINE_S,
    HEARTBEAT_INTERVAL_S,
    STALENESS_S,
)
from awa.domain.validation import ARGS_BYTES_MAX_DEFAULT
from awa.ports import (
    BulkInserts,
    ClaimStore,
    Clock,
    SystemClock,
)
from awa.runtime.config import RuntimeConfig
from awa.runtime.health import Health, check_health
from awa.runtime.observe import Observer
from awa.runtime.registry import TaskRegistry
from awa.runtime.runtime import Runtime

__all__ = ["AsyncClient", "QueueSpec"]


class AsyncClient(Declarations, AsyncVerbs):
    """Insert, run and manage jobs from asyncio code.

    ``AsyncClient("postgresql://...")`` opens the store the URL names (``memory://`` too);
    ``AsyncClient(store=MemoryStore(clock))`` runs on a store you built (tests, simulation).
    ``max_args_bytes`` is the largest args (as JSON) an insert accepts; ``None`` for no limit.
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        store: ClaimStore | None = None,
        clock: Clock | None = None,
        max_args_bytes: int | None = ARGS_BYTES_MAX_DEFAULT,
    ) -> None:
        limit = check_max_args_bytes(max_args_bytes)
        self.store = open_client_store(dsn, store)
        self._owns_store = store is None  # opened from a URL: ours to close
        self.clock: Clock = clock or self.store.clock or SystemClock()
        self.registry = TaskRegistry()
        self._requests = Requests(self.registry, limit)
        self._ops = StoreAccess(self.store, self._requests)
        # asked once: a check against a runtime protocol costs about 10 us per insert
        self._bulk = self.store if isinstance(self.store, BulkInserts) else None
        self._runtime: Runtime | None = None
        self._schedules: dict[str, Schedule] = {}

    # -- set-up -------------------------------------------------------------------------------
    async def migrate(self) -> None:
        """Create or upgrade the store's schema (nothing to do for the memory store)."""
        await self._call(self._ops.migrate)

    # -- producers ----------------------------------------------------------------------------
    insert = produces_async(
        doc="""Insert one job. With ``conn`` (a psycopg, SQLAlchemy, Django or asyncpg
        connection or session of yours) the insert joins that connection's open transaction:
        your commit makes the job visible and wakes a worker, your rollback makes it vanish.
        With ``unique``, a job that holds the same key makes it raise ``awa.UniqueConflict``,
        or with ``on_conflict="skip"`` the holder is returned and nothing is written
        (``docs/unique-jobs.md``). ``concurrency_key`` and ``ordering_key`` put the job
        under its queue's per-key limits and its key's insert order
        (``docs/flow-control.md``).""",
    )(producing.insert)
    insert_many = produces_async(
        doc="""Insert every item (args, or an ``InsertSpec`` with options) in one transaction;
        one bad item refuses the batch with ``ValidationError`` and writes nothing. Returns
        the jobs in order, or with ``returning="ids"`` only their ids, which spares a large
        batch the making of a ``Job`` value per item.""",
    )(producing.insert_many)

    async def _insert_batch(self, batch: Batch[Any], /) -> list[JobRecord] | list[int]:
        items, conn, on_conflict, ids = batch.items, batch.conn, batch.on_conflict, batch.ids
        if conn is None and self._bulk is not None:  # PostgreSQL: the store routes the batch
            chunks = self._requests.new_job_chunks(items)  # made when the store asks
            unique = not self._requests.streamable(items)
            return await self._bulk.insert_batch_async(
                len(items), chunks, unique=unique, on_conflict=on_conflict, ids=ids
            )
        jobs = self._requests.new_jobs(items)
        if conn is not None:  # awaited if it is an asyncio connection, else on this thread
            on_conn = self._ops.on_connection()
            inserted = await on_conn.insert_on_async(conn, jobs, on_conflict=on_conflict)
        else:
            inserted = await self._call(self._ops.insert, jobs, None, on_conflict)
        return [job.id for job in inserted] if ids else inserted

    # -- workers ------------------------------------------------------------------------------
    async def start(
        self,
        queues: Sequence[QueueSpec],
        *,
        deadline_duration: float = DEADLINE_S,
        dlq_enabled: bool | None = None,
        heartbeat_interval: float = HEARTBEAT_INTERVAL_S,
        heartbeat_staleness: float = STALENESS_S,
        poll_interval: float = 1.0,
        priority_aging_interval: float = 0.0,
        claim_ahead: bool = True,
        runtime_config: RuntimeConfig | None = None,
        observers: Sequence[Observer] = (),
        global_max_workers: int | None = None,
    ) -> None:
        """Start working ``queues``, given as ``(name, concurrency)`` pairs, ``QueueConfig``
        values (``QueueConfig("api", max_workers=20)``) or upstream's dicts
        (``{"name": "api", "max_workers": 20, "rate_limit": (100.0, 100)}``, the keys in
        ``docs/weighted-queues.md``); the keyword settings apply to the pairs and to what a
        dict does not give. ``observers`` hear
        every event of the worker (``awa.runtime.observe``). The schedules given to
        ``periodic()`` are stored now.

        ``global_max_workers=N`` shares N handler slots among the queues: each queue's
        ``QueueConfig.min_workers`` are its own, the rest go by ``weight`` to the queues that
        have work, and no queue runs more than its ``concurrency`` (``docs/weighted-queues.md``;
        the same as ``RuntimeConfig.global_max_workers``).

        ``dlq_enabled`` is stored with each queue, for every process working it, and only when
        given: ``None`` leaves the queue's routing as it is (``configure_queue``); so are a
        queue's ``rate_limit``, ``concurrency_limit`` and retention. Refused
        (``ValidationError``) when no task is registered, or a queue is no task's queue."""
        if self._runtime is not None:
            raise ValidationError("this client is already running workers")
        settings = {
            "deadline_duration_s": deadline_duration,
            "dlq_enabled": dlq_enabled,
            "heartbeat_interval_s": heartbeat_interval,
            "heartbeat_staleness_s": heartbeat_staleness,
            "poll_interval_s": poll_interval,
            "priority_aging_interval_s": priority_aging_interval,
            "claim_ahead": claim_ahead,
        }
        config = runtime_config or RuntimeConfig()
        if global_max_workers is not None:
            config = attrs.evolve(config, global_max_workers=global_max_workers)
        runtime = Runtime(
            self.store,
            self.registry,
            queue_configs(queues, settings),
            clock=self.clock,
            config=config,
            observers=observers,
            schedules=list(self._schedules.values()),
        )
        await runtime.start()
        self._runtime = runtime

    async def shutdown(self, timeout: float = 30.0) -> None:
        """Stop claiming, let running handlers finish for up to ``timeout`` seconds, flush
        their outcomes, and stop. What is still running then will be rescued."""
        runtime, self._runtime = self._runtime, None
        if runtime is not None:
            await runtime.shutdown(timeout)
        if self._bulk is not None:
            await self._bulk.close_async()

    async def close(self) -> None:
        """Shut workers down and release the database connections this client opened."""
        await self.shutdown()
        if self._owns_store:
            await self._call(self._ops.close)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def runtime(self) -> Runtime | None:
        return self._runtime

    async def health_check(self) -> Health:
        """Whether the database answers, the listener is connected, when each of the
        worker's services last ran without failing, and the handler slots in use per queue;
        ``health.alive`` and ``health.ready`` sum it up (``awa.runtime.health``)."""
        return await check_health(self.store, self._runtime, self._call)
