"""``awa.AsyncClient`` and ``awa.Client``: the surface applications write against.

Both are thin: every verb is written once, as a plain synchronous method of ``_Operations``;
the async client runs it off the event loop, the sync client calls it. The store comes from a
URL (``awa.adapters.open_store``) or is given; what it can do beyond the port (migrate, close,
listen, insert on the caller's connection or from the loop) is asked of it through the
capability protocols of ``awa.ports``, never by importing an adapter.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar, overload
from zoneinfo import ZoneInfo

import attrs

from awa.adapters.registry import open_store
from awa.domain import (
    CompleteCallback,
    DlqEntry,
    FailCallback,
    JobState,
    MissedFirePolicy,
    NewJob,
    OnConflict,
    Resolution,
    ResumeCallback,
    RetryCallback,
    Schedule,
    ScheduleRecord,
    SerializationError,
    Unique,
    ValidationError,
)
from awa.domain import Job as JobRecord
from awa.domain.defaults import (
    CALLBACK_TIMEOUT_S,
    DEADLINE_S,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    FAILED_BY_CALLBACK,
    HEARTBEAT_INTERVAL_S,
    STALENESS_S,
)
from awa.domain.unique import check_on_conflict
from awa.domain.validation import ARGS_BYTES_MAX_DEFAULT, check_args_size, check_state, shown
from awa.ports import (
    BATCH_SIZE_MAX,
    AsyncInserts,
    ClaimStore,
    Clock,
    Closes,
    InsertsOnConnection,
    Migrates,
    QueueSettings,
    QueueStats,
    StreamsInserts,
    SystemClock,
)
from awa.runtime.config import QueueConfig, RuntimeConfig
from awa.runtime.health import Health, check_health
from awa.runtime.kinds import JobKind, declared_kind
from awa.runtime.observe import Observer
from awa.runtime.registry import TaskRegistry
from awa.runtime.runtime import Runtime
from awa.runtime.serialization import default_kind, dump_args
from awa.tracing import current_trace_context, with_trace_context

__all__ = ["AsyncClient", "Client", "InsertSpec"]

log = logging.getLogger("awa.client")

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")
QueueSpec = tuple[str, int] | QueueConfig


@attrs.frozen(kw_only=True)
class InsertSpec:
    """One job for ``insert_many``: args plus any insert option. An option left ``None`` comes
    from the kind's ``@awa.job_kind`` declaration, else from its registered task, else the
    default (queue ``default``, priority 2, 25 attempts)."""

    args: Any
    kind: str | None = None
    queue: str | None = None
    priority: int | None = None
    max_attempts: int | None = None
    run_at: datetime | None = None
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] | None = None
    unique: Unique | None = None


_UNDECLARED = JobKind()  # a kind without @awa.job_kind: no option declared


def _returns_ids(returning: object) -> bool:
    if returning not in ("jobs", "ids"):
        raise ValidationError(f"returning takes 'jobs' or 'ids', got {shown(returning)}")
    return returning == "ids"


def _first(option: int | None, declared: int | None, default: int) -> int:
    if option is not None:
        return option
    return declared if declared is not None else default


def _shape(spec: InsertSpec) -> tuple[Any, ...] | None:
    """What ``_Operations.new_job`` makes of ``spec`` besides its args: items of equal shape
    differ only in args. ``None`` for an item made on its own: metadata or a unique key (made
    per job), or an option of a type other than the plain one, where equal values need not
    mean an equal job (``True == 1``, one instant in two zones, a string of tags, a zone of
    a type that may not hash)."""
    if spec.metadata is not None or spec.unique is not None:
        return None
    tags = spec.tags
    if type(tags) not in _TAG_LISTS or (tags and not all(type(tag) is str for tag in tags)):
        return None
    run_at = spec.run_at
    zone: Any = None
    if run_at is not None:
        if type(run_at) is not datetime:
            return None
        zone = run_at.tzinfo
        if type(zone) is timezone:  # equal offsets, so equal zones, may differ in name
            zone = (zone, zone.tzname(None))
        elif type(zone) is not ZoneInfo:  # ZoneInfo is equal only to itself
            return None
    kind, queue, priority, max_attempts = spec.kind, spec.queue, spec.priority, spec.max_attempts
    if not (
        type(kind) in _PLAIN_OPTION_TYPES
        and type(queue) in _PLAIN_OPTION_TYPES
        and type(priority) in _PLAIN_OPTION_TYPES
        and type(max_attempts) in _PLAIN_OPTION_TYPES
    ):
        return None
    return (type(spec.args), kind, queue, priority, max_attempts, run_at, zone, tuple(tags))


_TAG_LISTS = frozenset({tuple, list})
#: shapes whose first request ``_Operations`` keeps; past that it starts again
_SHAPES_KEPT_MAX = 256
#: what ``insert_many`` returns: the inserted ``Job`` values, or only their ids
Returning = Literal["jobs", "ids"]
#: jobs per chunk of a streamed insert: small enough that making the next chunk overlaps the
#: database taking in the last, large enough that a chunk costs far more than handing it over
STREAM_CHUNK_JOBS = 200
_PLAIN_OPTION_TYPES = frozenset({type(None), str, int})


def _open_store(url: str | None, store: ClaimStore | None) -> ClaimStore:
    if (url is None) == (store is None):
        raise ValidationError("give either a store URL or store=..., not both or neither")
    if store is not None:
        return store
    assert url is not None
    return open_store(url)


def _check_max_args_bytes(value: object) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValidationError(
            f"max_args_bytes must be a positive integer or None, got {shown(value)}"
        )
    return value


def _queue_configs(queues: Sequence[QueueSpec], settings: Mapping[str, Any]) -> list[QueueConfig]:
    configs = []
    for spec in queues:
        if isinstance(spec, QueueConfig):
            configs.append(spec)
            continue
        if not (isinstance(spec, tuple) and len(spec) == 2):
            raise ValidationError(f"queues are (name, concurrency) pairs, got {shown(spec)}")
        name, concurrency = spec
        configs.append(QueueConfig(queue=name, concurrency=concurrency, **settings))
    names = [c.queue for c in configs]
    if len(set(names)) != len(names):
        raise ValidationError(f"a queue is listed twice: {names}")
    return configs


class _Operations:
    """Every verb of the clients, once, as plain synchronous methods over the store."""

    def __init__(self, store: ClaimStore, registry: TaskRegistry, max_args_bytes: int | None):
        self.store = store
        self.registry = registry
        self.max_args_bytes = max_args_bytes
        # each shape's request made outside any span, kept from call to call as long as no
        # task is added (``_firsts_for``): one-by-one inserts make theirs from it
        self._firsts: dict[tuple[Any, ...], NewJob] = {}
        self._firsts_additions = registry.additions

    # -- producers ----------------------------------------------------------------------------
    def new_job(self, spec: InsertSpec, trace_context: Mapping[str, str] | None = None) -> NewJob:
        """``spec`` as a validated request; ``trace_context`` is the call's
        (``current_trace_context()`` when not given)."""
        args = spec.args
        is_mapping = isinstance(args, Mapping)
        declared = None if is_mapping else declared_kind(type(args))
        task = self.registry.for_args(args)
        if task is None and spec.kind is not None:
            task = self.registry.for_kind(spec.kind)
        if spec.kind is not None:
            kind = spec.kind
        elif task is not None:
            kind = task.kind
        elif declared is not None and declared.kind is not None:
            kind = declared.kind
        elif is_mapping:
            raise ValidationError("a dict of args needs kind=...")
        else:
            kind = default_kind(type(args))
        # an explicit option is checked as given ("" included); a task agrees with the
        # declaration (TaskRegistry.add), so their order below only matters without one
        declared = declared or _UNDECLARED
        if spec.queue is not None:
            queue = spec.queue
        else:
            queue = declared.queue or (task.queue if task is not None else "default")
        job = NewJob(
            kind=kind,
            args=dump_args(args),
            queue=queue,
            priority=_first(spec.priority, declared.priority, DEFAULT_PRIORITY),
            max_attempts=_first(spec.max_attempts, declared.max_attempts, DEFAULT_MAX_ATTEMPTS),
            run_at=spec.run_at,
            tags=spec.tags,  # NewJob refuses a string, which tuple() would split into letters
            metadata=with_trace_context(
                spec.metadata if spec.metadata is not None else {}, trace_context
            ),
            unique=spec.unique,
        )
        check_args_size(job.args_json(), self.max_args_bytes)
        return job

    def new_jobs(self, items: Sequence[Any | InsertSpec]) -> list[NewJob]:
        """Every item checked before any is written: one bad item refuses the batch.

        Items of one shape (``_shape``) are made from the first one's request
        (``NewJob.with_args``): kind, queue and options are resolved and checked once, and
        each further item, in this call or a later one, has only its args serialized and
        checked."""
        if type(items) is not list and (  # a list, the common case, without two ABC checks
            isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence)
        ):
            raise ValidationError(f"insert_many takes a list of args, got {type(items).__name__}")
        context = current_trace_context()  # one span inserts the whole batch
        return self._new_jobs(items, context, self._firsts_for(context), numbered=len(items) > 1)

    def streamable(self, items: Sequence[Any | InsertSpec]) -> bool:
        """Whether ``items`` may go to a store that ``StreamsInserts`` as chunks made one at a
        time: a list of more than one chunk, within a batch's bound, without unique keys (the
        streamed insert does not look for a key's holder)."""
        return (
            type(items) is list
            and STREAM_CHUNK_JOBS < len(items) <= BATCH_SIZE_MAX
            and not any(isinstance(item, InsertSpec) and item.unique is not None for item in items)
        )

    def new_job_chunks(self, items: Sequence[Any | InsertSpec]) -> Iterator[list[NewJob]]:
        """``new_jobs`` of ``items`` a chunk at a time, each made when the store asks for it
        (``StreamsInserts``): a bad item raises from the chunk that holds it."""
        context = current_trace_context()  # now, in the caller's context, not when first asked
        firsts = self._firsts_for(context)
        return (
            self._new_jobs(
                items[start : start + STREAM_CHUNK_JOBS], context, firsts, first_index=start
            )
            for start in range(0, len(items), STREAM_CHUNK_JOBS)
        )

    def _new_jobs(
        self,
        items: Sequence[Any | InsertSpec],
        context: Mapping[str, str],
        firsts: dict[tuple[Any, ...], NewJob],
        *,
        first_index: int = 0,
        numbered: bool = True,
    ) -> list[NewJob]:
        """The requests for ``items``; a refusal names the item's position in the caller's
        list (``first_index``: the position of ``items[0]`` there) unless not ``numbered``,
        as for a single insert."""
        jobs = []
        for index, item in enumerate(items):
            try:
                jobs.append(self._new_item(item, context, firsts))
            except (ValidationError, SerializationError) as exc:
                if not numbered or type(exc) not in (ValidationError, SerializationError):
                    raise
                raise type(exc)(f"item {first_index + index}: {exc}") from exc.__cause__
        return jobs

    def _new_item(
        self, item: Any, context: Mapping[str, str], firsts: dict[tuple[Any, ...], NewJob]
    ) -> NewJob:
        spec = item if isinstance(item, InsertSpec) else InsertSpec(args=item)
        shape = _shape(spec)
        first = firsts.get(shape) if shape is not None else None
        if first is None:
            job = self.new_job(spec, context)
            if shape is not None:
                if len(firsts) >= _SHAPES_KEPT_MAX:
                    firsts.clear()
                firsts[shape] = job.with_args({})  # the shape, not this item's args
            return job
        job = first.with_args(dump_args(spec.args))
        check_args_size(job.args_json(), self.max_args_bytes)
        return job

    def _firsts_for(self, trace_context: Mapping[str, str]) -> dict[tuple[Any, ...], NewJob]:
        """Where ``new_jobs`` finds and keeps the first request of each shape: this call's
        own inside a span (its context is in every request), else the ones kept from call
        to call, forgotten when a task is added (it can change a shape's kind or queue)."""
        if trace_context:
            return {}
        if self._firsts_additions != self.registry.additions:
            self._firsts, self._firsts_additions = {}, self.registry.additions
        return self._firsts

    def on_connection(self) -> InsertsOnConnection:
        if not isinstance(self.store, InsertsOnConnection):
            raise ValidationError(
                f"{type(self.store).__name__} cannot insert on a connection of yours (conn=)"
            )
        return self.store

    def insert(
        self, jobs: list[NewJob], conn: Any = None, on_conflict: OnConflict = "raise"
    ) -> list[JobRecord]:
        if conn is None:
            return self.store.insert(jobs, on_conflict=on_conflict)
        return self.on_connection().insert_on(conn, jobs, on_conflict=on_conflict)

    def schedule(
        self,
        name: str,
        cron: str,
        spec: InsertSpec,
        timezone: str,
        missed_fire_policy: MissedFirePolicy,
    ) -> Schedule:
        if spec.run_at is not None:
            raise ValidationError("a periodic job runs at its fire time: give it no run_at")
        return Schedule(
            name=name,
            cron=cron,
            job=self.new_job(spec),
            timezone=timezone,
            missed_fire_policy=missed_fire_policy,
        )

    def cancel_by_unique_key(self, spec: InsertSpec) -> JobRecord | None:
        if spec.unique is None:
            raise ValidationError("cancel_by_unique_key needs unique=awa.Unique(...)")
        return self.store.cancel_by_unique_key(self.new_job(spec))

    # -- set-up -------------------------------------------------------------------------------
    def migrate(self) -> None:
        if isinstance(self.store, Migrates):
            self.store.migrate()

    def close(self) -> None:
        if isinstance(self.store, Closes):
            self.store.close()

    # -- operators ----------------------------------------------------------------------------
    def list_jobs(
        self,
        state: JobState | str | None,
        kind: str | None,
        queue: str | None,
        limit: int,
        **page: Any,
    ) -> list[JobRecord]:
        checked = check_state(state) if state is not None else None
        return self.store.list_jobs(state=checked, kind=kind, queue=queue, limit=limit, **page)

    def count_jobs(self, state: JobState | str | None, kind: str | None, queue: str | None) -> int:
        checked = check_state(state) if state is not None else None
        return self.store.count_jobs(state=checked, kind=kind, queue=queue)

    def resolve(self, callback_id: str, resolution: Resolution) -> JobRecord:
        return self.store.resolve_callback(callback_id, resolution)


class AsyncClient:
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
        limit = _check_max_args_bytes(max_args_bytes)
        self.store = _open_store(dsn, store)
        self._owns_store = store is None  # opened from a URL: ours to close
        self.clock: Clock = clock or self.store.clock or SystemClock()
        self.registry = TaskRegistry()
        self._ops = _Operations(self.store, self.registry, limit)
        # asked once: a check against a runtime protocol costs about 10 us per insert
        self._async_inserts = self.store if isinstance(self.store, AsyncInserts) else None
        self._streams = self.store if isinstance(self.store, StreamsInserts) else None
        self._runtime: Runtime | None = None
        self._schedules: dict[str, Schedule] = {}

    async def _call(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        return await asyncio.to_thread(fn, *args, **kwargs)

    # -- set-up -------------------------------------------------------------------------------
    async def migrate(self) -> None:
        """Create or upgrade the store's schema (nothing to do for the memory store)."""
        await self._call(self._ops.migrate)

    def task(
        self, args_type: type[Any], *, queue: str | None = None, kind: str | None = None
    ) -> Callable[[F], F]:
        """Register the decorated function as the handler of ``args_type`` jobs; queue and
        kind default to the ``@awa.job_kind`` declaration, else ``default`` and the kind
        named after the class (``SendEmail`` -> ``send_email``)."""

        def register(handler: F) -> F:
            self.registry.add(args_type, handler, queue=queue, kind=kind)
            return handler

        return register

    def periodic(
        self,
        name: str,
        cron: str,
        args: Any,
        *,
        timezone: str = "UTC",
        missed_fire_policy: MissedFirePolicy = "coalesce",
        kind: str | None = None,
        queue: str | None = None,
        priority: int = DEFAULT_PRIORITY,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        unique: Unique | None = None,
    ) -> Schedule:
        """Insert ``args`` as a job at every time ``cron`` names (5 fields, or 6 with seconds
        first) in ``timezone``. Call it before ``start()``, which stores the schedule;
        registering is additive and idempotent, and whichever process leads maintenance fires
        it. A fire whose ``unique`` key is held is skipped. See ``docs/periodic-jobs.md``."""
        if self._runtime is not None:
            raise ValidationError("register periodic jobs before start()")
        spec = InsertSpec(
            args=args,
            kind=kind,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            tags=tags,
            metadata=metadata,
            unique=unique,
        )
        schedule = self._ops.schedule(name, cron, spec, timezone, missed_fire_policy)
        self._schedules[schedule.name] = schedule
        return schedule

    # -- producers ----------------------------------------------------------------------------
    async def insert(
        self,
        args: Any,
        *,
        kind: str | None = None,
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        run_at: datetime | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        unique: Unique | None = None,
        on_conflict: OnConflict = "raise",
        conn: Any = None,
    ) -> JobRecord:
        """Insert one job. With ``conn`` (a psycopg, SQLAlchemy, Django or asyncpg connection
        or session of yours) the insert joins that connection's open transaction: your commit
        makes the job visible and wakes a worker, your rollback makes it vanish. With
        ``unique``, a job that holds the same key makes it raise ``awa.UniqueConflict``, or
        with ``on_conflict="skip"`` the holder is returned and nothing is written
        (``docs/unique-jobs.md``)."""
        spec = InsertSpec(
            args=args,
            kind=kind,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            run_at=run_at,
            tags=tags,
            metadata=metadata,
            unique=unique,
        )
        [job] = await self.insert_many([spec], conn=conn, on_conflict=on_conflict)
        return job

    @overload
    async def insert_many(
        self,
        items: Sequence[Any | InsertSpec],
        *,
        conn: Any = None,
        on_conflict: OnConflict = "raise",
        returning: Literal["jobs"] = "jobs",
    ) -> list[JobRecord]: ...

    @overload
    async def insert_many(
        self,
        items: Sequence[Any | InsertSpec],
        *,
        conn: Any = None,
        on_conflict: OnConflict = "raise",
        returning: Literal["ids"],
    ) -> list[int]: ...

    async def insert_many(
        self,
        items: Sequence[Any | InsertSpec],
        *,
        conn: Any = None,
        on_conflict: OnConflict = "raise",
        returning: Returning = "jobs",
    ) -> list[JobRecord] | list[int]:
        """Insert every item (args, or an ``InsertSpec`` with options) in one transaction; one
        bad item refuses the batch with ``ValidationError`` and writes nothing. Returns the
        jobs in order, or with ``returning="ids"`` only their ids, which spares a large batch
        the making of a ``Job`` value per item."""
        ids = _returns_ids(returning)
        if conn is None and self._streams is not None and self._ops.streamable(items):
            check_on_conflict(on_conflict)  # refused as the store's insert would refuse it
            chunks = self._ops.new_job_chunks(items)  # made while the store writes the last
            if ids:
                return await self._streams.insert_streamed_ids_async(len(items), chunks)
            return await self._streams.insert_streamed_async(len(items), chunks)
        jobs = await self._insert_jobs(items, conn, on_conflict)
        return [job.id for job in jobs] if ids else jobs

    async def _insert_jobs(
        self, items: Sequence[Any | InsertSpec], conn: Any, on_conflict: OnConflict
    ) -> list[JobRecord]:
        jobs = self._ops.new_jobs(items)
        if conn is not None:  # awaited if it is an asyncio connection, else on this thread
            on_conn = self._ops.on_connection()
            return await on_conn.insert_on_async(conn, jobs, on_conflict=on_conflict)
        if self._async_inserts is not None:  # PostgreSQL: no hop to a thread
            return await self._async_inserts.insert_async(jobs, on_conflict=on_conflict)
        return await self._call(self._ops.insert, jobs, None, on_conflict)

    async def cancel_by_unique_key(
        self,
        args: Any,
        *,
        unique: Unique,
        kind: str | None = None,
        queue: str | None = None,
        run_at: datetime | None = None,
    ) -> JobRecord | None:
        """Cancel the job holding the key that ``insert(args, unique=unique, ...)`` would take
        now; ``None`` when no job holds it."""
        spec = InsertSpec(args=args, kind=kind, queue=queue, run_at=run_at, unique=unique)
        return await self._call(self._ops.cancel_by_unique_key, spec)

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
    ) -> None:
        """Start working ``queues``, given as ``(name, concurrency)`` pairs or
        ``QueueConfig`` values; the keyword settings apply to the pairs. ``observers`` hear
        every event of the worker (``awa.runtime.observe``). The schedules given to
        ``periodic()`` are stored now.

        ``dlq_enabled`` is stored with each queue, for every process working it, and only when
        given: ``None`` leaves the queue's routing as it is (``configure_queue``). Refused
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
        runtime = Runtime(
            self.store,
            self.registry,
            _queue_configs(queues, settings),
            clock=self.clock,
            config=runtime_config,
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
        if isinstance(self.store, AsyncInserts):
            await self.store.close_async()

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

    # -- operators ----------------------------------------------------------------------------
    async def get_job(self, job_id: int) -> JobRecord:
        return await self._call(self.store.get_job, job_id)

    async def list_jobs(
        self,
        *,
        state: JobState | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        tag: str | None = None,
        before_id: int | None = None,
    ) -> list[JobRecord]:
        """Jobs outside the dead-letter queue, newest first, holding ``tag`` when given; pass
        the last id of a page as ``before_id`` for the next one."""
        page = {"tag": tag, "before_id": before_id}
        return await self._call(self._ops.list_jobs, state, kind, queue, limit, **page)

    async def count_jobs(
        self,
        *,
        state: JobState | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
    ) -> int:
        """How many jobs ``list_jobs`` would list with these filters and no limit."""
        return await self._call(self._ops.count_jobs, state, kind, queue)

    async def cancel(self, job_id: int) -> JobRecord:
        return await self._call(self.store.cancel, job_id)

    async def retry(self, job_id: int, *, run_at: datetime | None = None) -> JobRecord:
        """Retry a failed or cancelled job with a fresh attempt budget: now, or at ``run_at``."""
        return await self._call(self.store.retry, job_id, run_at=run_at)

    async def retry_failed(
        self,
        *,
        kind: str | None = None,
        queue: str | None = None,
        all: bool = False,
        run_at: datetime | None = None,
    ) -> list[JobRecord]:
        """Retry every failed job of a kind and/or queue (``all=True``: every one), now or at
        ``run_at``."""
        return await self._call(
            self.store.retry_failed, queue=queue, kind=kind, all=all, run_at=run_at
        )

    async def discard_failed(
        self, *, kind: str | None = None, queue: str | None = None, all: bool = False
    ) -> int:
        """Delete every failed job of a kind and/or queue (``all=True``: every one)."""
        return await self._call(self.store.discard_failed, queue=queue, kind=kind, all=all)

    async def drain_queue(self, queue: str) -> int:
        """Cancel every job of ``queue`` that no attempt is running; how many."""
        return await self._call(self.store.drain_queue, queue)

    async def pause_queue(self, queue: str) -> None:
        await self._call(self.store.pause_queue, queue)

    async def resume_queue(self, queue: str) -> None:
        await self._call(self.store.resume_queue, queue)

    async def queue_stats(self) -> list[QueueStats]:
        return await self._call(self.store.queue_stats)

    async def configure_queue(
        self,
        queue: str,
        *,
        dlq_enabled: bool | None = None,
        finished_retention_s: float | None = None,
        dlq_retention_s: float | None = None,
        failed_retention_s: float | None = None,
    ) -> QueueSettings:
        """Store ``queue``'s settings for every process that works it; ``None`` leaves a
        setting as it is. Returns them all. The retentions override the maintenance
        leader's ``RuntimeConfig`` defaults for this queue: ``finished_retention_s`` for its
        completed jobs, ``failed_retention_s`` for its failed and cancelled ones outside the
        dead-letter queue, ``dlq_retention_s`` for its dead-letter entries."""
        return await self._call(
            self.store.configure_queue,
            queue,
            dlq_enabled=dlq_enabled,
            finished_retention_s=finished_retention_s,
            dlq_retention_s=dlq_retention_s,
            failed_retention_s=failed_retention_s,
        )

    async def dump_job(self, job_id: int) -> JobRecord:
        """The whole job with its error history, attempt by attempt."""
        return await self._call(self.store.get_job, job_id)

    async def list_dlq(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        before_id: int | None = None,
    ) -> list[DlqEntry]:
        return await self._call(
            self.store.list_dlq, queue=queue, kind=kind, limit=limit, before_id=before_id
        )

    async def retry_from_dlq(self, job_id: int, *, run_at: datetime | None = None) -> JobRecord:
        return await self._call(self.store.retry_from_dlq, job_id, run_at=run_at)

    async def bulk_retry_from_dlq(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        all: bool = False,
        run_at: datetime | None = None,
    ) -> list[JobRecord]:
        return await self._call(
            self.store.bulk_retry_from_dlq, queue=queue, kind=kind, all=all, run_at=run_at
        )

    async def purge_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        return await self._call(self.store.purge_dlq, queue=queue, kind=kind, all=all)

    async def purge_dlq_job(self, job_id: int) -> None:
        await self._call(self.store.purge_dlq_job, job_id)

    # -- periodic schedules -------------------------------------------------------------------
    async def list_periodic(self) -> list[ScheduleRecord]:
        """Every stored schedule with its next and last fire, by name."""
        return await self._call(self.store.list_schedules)

    async def pause_periodic(self, name: str) -> ScheduleRecord:
        return await self._call(self.store.set_schedule_paused, name, True)

    async def resume_periodic(self, name: str) -> ScheduleRecord:
        """Fires again from now on (what it missed while paused is not made up)."""
        return await self._call(self.store.set_schedule_paused, name, False)

    async def trigger_periodic(self, name: str) -> JobRecord:
        """Insert one run now, outside the schedule's cadence."""
        return await self._call(self.store.trigger_schedule, name)

    async def remove_periodic(self, name: str) -> None:
        await self._call(self.store.remove_schedule, name)

    # -- the external side of callbacks -------------------------------------------------------
    async def complete_external(self, callback_id: str, payload: Any = None) -> JobRecord:
        return await self._call(self._ops.resolve, callback_id, CompleteCallback(payload))

    async def fail_external(self, callback_id: str, error: str = FAILED_BY_CALLBACK) -> JobRecord:
        return await self._call(self._ops.resolve, callback_id, FailCallback(error))

    async def retry_external(self, callback_id: str) -> JobRecord:
        return await self._call(self._ops.resolve, callback_id, RetryCallback())

    async def resume_external(self, callback_id: str, payload: Any = None) -> JobRecord:
        return await self._call(self._ops.resolve, callback_id, ResumeCallback(payload))

    async def heartbeat_callback(
        self, callback_id: str, timeout: float = CALLBACK_TIMEOUT_S
    ) -> JobRecord:
        return await self._call(self.store.heartbeat_callback, callback_id, timeout_s=timeout)


class Client:
    """The same surface without ``await``. Workers run on a private event loop thread; sync
    handlers run in its thread pool and receive ``awa.SyncJob``."""

    def __init__(
        self,
        dsn: str | None = None,
        *,
        store: ClaimStore | None = None,
        clock: Clock | None = None,
        max_args_bytes: int | None = ARGS_BYTES_MAX_DEFAULT,
    ) -> None:
        self._async = AsyncClient(dsn, store=store, clock=clock, max_args_bytes=max_args_bytes)
        self.store = self._async.store
        self.registry = self._async.registry
        self._ops = self._async._ops
        self._streams = self._async._streams
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _in_loop(self, coro: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="awa-client-loop", daemon=True
            )
            self._thread.start()
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result()

    def migrate(self) -> None:
        self._ops.migrate()

    def task(
        self, args_type: type[Any], *, queue: str | None = None, kind: str | None = None
    ) -> Callable[[F], F]:
        return self._async.task(args_type, queue=queue, kind=kind)

    def periodic(
        self,
        name: str,
        cron: str,
        args: Any,
        *,
        timezone: str = "UTC",
        missed_fire_policy: MissedFirePolicy = "coalesce",
        kind: str | None = None,
        queue: str | None = None,
        priority: int = DEFAULT_PRIORITY,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        unique: Unique | None = None,
    ) -> Schedule:
        """``AsyncClient.periodic``: stored by ``start()``."""
        return self._async.periodic(
            name,
            cron,
            args,
            timezone=timezone,
            missed_fire_policy=missed_fire_policy,
            kind=kind,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            tags=tags,
            metadata=metadata,
            unique=unique,
        )

    def insert(
        self,
        args: Any,
        *,
        kind: str | None = None,
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        run_at: datetime | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        unique: Unique | None = None,
        on_conflict: OnConflict = "raise",
        conn: Any = None,
    ) -> JobRecord:
        """Insert one job; with ``conn`` (a psycopg, SQLAlchemy or Django connection or
        session of yours) inside its open transaction; ``unique`` and ``on_conflict`` as
        ``AsyncClient.insert``."""
        spec = InsertSpec(
            args=args,
            kind=kind,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            run_at=run_at,
            tags=tags,
            metadata=metadata,
            unique=unique,
        )
        [job] = self.insert_many([spec], conn=conn, on_conflict=on_conflict)
        return job

    @overload
    def insert_many(
        self,
        items: Sequence[Any | InsertSpec],
        *,
        conn: Any = None,
        on_conflict: OnConflict = "raise",
        returning: Literal["jobs"] = "jobs",
    ) -> list[JobRecord]: ...

    @overload
    def insert_many(
        self,
        items: Sequence[Any | InsertSpec],
        *,
        conn: Any = None,
        on_conflict: OnConflict = "raise",
        returning: Literal["ids"],
    ) -> list[int]: ...

    def insert_many(
        self,
        items: Sequence[Any | InsertSpec],
        *,
        conn: Any = None,
        on_conflict: OnConflict = "raise",
        returning: Returning = "jobs",
    ) -> list[JobRecord] | list[int]:
        """``AsyncClient.insert_many`` on this thread."""
        ids = _returns_ids(returning)
        if conn is None and self._streams is not None and self._ops.streamable(items):
            check_on_conflict(on_conflict)  # refused as the store's insert would refuse it
            chunks = self._ops.new_job_chunks(items)  # made while the store writes the last
            if ids:
                return self._streams.insert_streamed_ids(len(items), chunks)
            return self._streams.insert_streamed(len(items), chunks)
        jobs = self._ops.insert(self._ops.new_jobs(items), conn, on_conflict)
        return [job.id for job in jobs] if ids else jobs

    def cancel_by_unique_key(
        self,
        args: Any,
        *,
        unique: Unique,
        kind: str | None = None,
        queue: str | None = None,
        run_at: datetime | None = None,
    ) -> JobRecord | None:
        spec = InsertSpec(args=args, kind=kind, queue=queue, run_at=run_at, unique=unique)
        return self._ops.cancel_by_unique_key(spec)

    def start(self, queues: Sequence[QueueSpec], **settings: Any) -> None:
        self._in_loop(self._async.start(queues, **settings))

    def shutdown(self, timeout: float = 30.0) -> None:
        if self._loop is None:
            return
        self._in_loop(self._async.shutdown(timeout))
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._loop = None

    def close(self) -> None:
        """Shut workers down and release the database connections this client opened."""
        self.shutdown()
        if self._async._owns_store:
            self._ops.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def runtime(self) -> Runtime | None:
        return self._async.runtime

    @property
    def async_client(self) -> AsyncClient:
        """The ``AsyncClient`` underneath, sharing this client's store and tasks: what
        ``awa worker`` runs on its own event loop when the app names a ``Client``."""
        return self._async

    def health_check(self) -> Health:
        """``AsyncClient.health_check``."""
        result: Health = self._in_loop(self._async.health_check())
        return result

    # -- operators and callbacks: direct store calls ------------------------------------------
    def get_job(self, job_id: int) -> JobRecord:
        return self.store.get_job(job_id)

    def list_jobs(
        self,
        *,
        state: JobState | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        tag: str | None = None,
        before_id: int | None = None,
    ) -> list[JobRecord]:
        return self._ops.list_jobs(state, kind, queue, limit, tag=tag, before_id=before_id)

    def count_jobs(
        self,
        *,
        state: JobState | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
    ) -> int:
        return self._ops.count_jobs(state, kind, queue)

    def cancel(self, job_id: int) -> JobRecord:
        return self.store.cancel(job_id)

    def retry(self, job_id: int, *, run_at: datetime | None = None) -> JobRecord:
        return self.store.retry(job_id, run_at=run_at)

    def retry_failed(
        self,
        *,
        kind: str | None = None,
        queue: str | None = None,
        all: bool = False,
        run_at: datetime | None = None,
    ) -> list[JobRecord]:
        return self.store.retry_failed(queue=queue, kind=kind, all=all, run_at=run_at)

    def discard_failed(
        self, *, kind: str | None = None, queue: str | None = None, all: bool = False
    ) -> int:
        return self.store.discard_failed(queue=queue, kind=kind, all=all)

    def drain_queue(self, queue: str) -> int:
        return self.store.drain_queue(queue)

    def pause_queue(self, queue: str) -> None:
        self.store.pause_queue(queue)

    def resume_queue(self, queue: str) -> None:
        self.store.resume_queue(queue)

    def queue_stats(self) -> list[QueueStats]:
        return self.store.queue_stats()

    def configure_queue(
        self,
        queue: str,
        *,
        dlq_enabled: bool | None = None,
        finished_retention_s: float | None = None,
        dlq_retention_s: float | None = None,
        failed_retention_s: float | None = None,
    ) -> QueueSettings:
        return self.store.configure_queue(
            queue,
            dlq_enabled=dlq_enabled,
            finished_retention_s=finished_retention_s,
            dlq_retention_s=dlq_retention_s,
            failed_retention_s=failed_retention_s,
        )

    def dump_job(self, job_id: int) -> JobRecord:
        return self.store.get_job(job_id)

    def list_dlq(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        before_id: int | None = None,
    ) -> list[DlqEntry]:
        return self.store.list_dlq(queue=queue, kind=kind, limit=limit, before_id=before_id)

    def retry_from_dlq(self, job_id: int, *, run_at: datetime | None = None) -> JobRecord:
        return self.store.retry_from_dlq(job_id, run_at=run_at)

    def bulk_retry_from_dlq(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        all: bool = False,
        run_at: datetime | None = None,
    ) -> list[JobRecord]:
        return self.store.bulk_retry_from_dlq(queue=queue, kind=kind, all=all, run_at=run_at)

    def purge_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        return self.store.purge_dlq(queue=queue, kind=kind, all=all)

    def purge_dlq_job(self, job_id: int) -> None:
        self.store.purge_dlq_job(job_id)

    def list_periodic(self) -> list[ScheduleRecord]:
        return self.store.list_schedules()

    def pause_periodic(self, name: str) -> ScheduleRecord:
        return self.store.set_schedule_paused(name, True)

    def resume_periodic(self, name: str) -> ScheduleRecord:
        return self.store.set_schedule_paused(name, False)

    def trigger_periodic(self, name: str) -> JobRecord:
        return self.store.trigger_schedule(name)

    def remove_periodic(self, name: str) -> None:
        self.store.remove_schedule(name)

    def complete_external(self, callback_id: str, payload: Any = None) -> JobRecord:
        return self._ops.resolve(callback_id, CompleteCallback(payload))

    def fail_external(self, callback_id: str, error: str = FAILED_BY_CALLBACK) -> JobRecord:
        return self._ops.resolve(callback_id, FailCallback(error))

    def retry_external(self, callback_id: str) -> JobRecord:
        return self._ops.resolve(callback_id, RetryCallback())

    def resume_external(self, callback_id: str, payload: Any = None) -> JobRecord:
        return self._ops.resolve(callback_id, ResumeCallback(payload))

    def heartbeat_callback(
        self, callback_id: str, timeout: float = CALLBACK_TIMEOUT_S
    ) -> JobRecord:
        return self.store.heartbeat_callback(callback_id, timeout_s=timeout)
