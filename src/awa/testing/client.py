"""``awa.testing.TestClient``: run your handlers in tests, one job at a time, without a
database or sleeping.

The test client is an ``AsyncClient`` on the memory store (or PostgreSQL, given a URL) whose
time is a ``ManualClock``. ``work_one()`` runs one due job through the real worker code: the
same claim, argument loading, handler call, outcome and fenced write as a running worker,
so what a handler does under test is what it does in production. Nothing runs in the
background: no heartbeats, no polling, no maintenance, and time moves only by ``advance``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, overload

import attrs

from awa.adapters.memory import ManualClock, MemoryStore
from awa.client import AsyncClient, InsertSpec
from awa.domain import ErrorEntry, JobState, Outcome, ValidationError
from awa.domain import Job as JobRecord
from awa.domain.defaults import DEADLINE_S
from awa.ports import BATCH_SIZE_MAX, ClaimStore, Closes, Migrates
from awa.runtime.attempts import Attempt
from awa.runtime.config import QueueConfig, RuntimeConfig
from awa.runtime.context import HandlerServices, Job, SyncJob
from awa.runtime.runtime import Runtime
from awa.runtime.scheduler import Scheduler
from awa.runtime.store_calls import StoreCalls

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.12

__all__ = ["HANDLER_TIMEOUT_S", "TestClient", "WorkResult", "make_job"]

F = TypeVar("F", bound=Callable[..., Any])

#: how long ``work_one`` waits, in real time, for a handler that does not return
HANDLER_TIMEOUT_S = 60.0
_WORK_ALL_MAX = 1000
_WAITING = (JobState.SCHEDULED, JobState.RETRYABLE)


@attrs.frozen
class WorkResult:
    """One attempt ``work_one`` ran: the job as written afterwards, and the handler's outcome
    as the worker read it (``Complete()``, ``Fail(error)``, ``RetryAfter``, ``Snooze``,
    ``Cancel``, ``WaitForCallback``); ``outcome`` is ``None`` when the attempt lost its job
    while running (cancelled meanwhile), so nothing of it was written."""

    job: JobRecord
    outcome: Outcome | None

    @property
    def state(self) -> JobState:
        return self.job.state

    @property
    def attempt(self) -> int:
        return self.job.attempt

    @property
    def errors(self) -> tuple[ErrorEntry, ...]:
        """The job's whole error history, attempt by attempt."""
        return self.job.errors

    @property
    def error(self) -> str | None:
        """This attempt's error (``"ValueError: card declined"``), if it ended with one."""
        last = self.job.errors[-1] if self.job.errors else None
        return last.error if last is not None and last.attempt == self.job.attempt else None


class TestClient:
    """Handlers, jobs and time for a test.

    ``TestClient()`` runs on a fresh memory store; ``TestClient("postgresql://...")`` on that
    database (migrated first), so the same tests run both ways. ``clock`` is the
    ``ManualClock`` the store tells time by (a new one by default). ``dlq_enabled`` and
    ``deadline_duration`` are the queue settings of ``start()``. Everything else a client does
    (callbacks, cancels, the dead-letter queue) is on ``test_client.client``.
    """

    __test__ = False  # not a test class, whatever pytest's collector thinks of the name

    def __init__(
        self,
        url: str | None = None,
        *,
        store: ClaimStore | None = None,
        clock: ManualClock | None = None,
        dlq_enabled: bool = False,
        deadline_duration: float = DEADLINE_S,
    ) -> None:
        if url is not None and store is not None:
            raise ValidationError("give TestClient a URL or store=..., not both")
        self.clock = clock if clock is not None else ManualClock()
        self._owns_store = store is None
        if store is None:
            store = MemoryStore(self.clock) if url is None else _postgres(url, self.clock)
        self.store = store
        self.client = AsyncClient(store=store, clock=self.clock)
        self.registry = self.client.registry
        self._dlq_enabled = dlq_enabled
        self._deadline_duration_s = deadline_duration

    def close(self) -> None:
        """Close the store this client opened from a URL."""
        if self._owns_store and isinstance(self.store, Closes):
            self.store.close()

    def __enter__(self) -> TestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- set-up -----------------------------------------------------------------------------
    def task(
        self, args_type: type[Any], *, queue: str | None = None, kind: str | None = None
    ) -> Callable[[F], F]:
        """Register a handler, as ``AsyncClient.task`` does."""
        return self.client.task(args_type, queue=queue, kind=kind)

    # -- jobs -------------------------------------------------------------------------------
    async def insert(self, args: Any, **options: Any) -> JobRecord:
        """Insert one job; ``options`` are ``AsyncClient.insert``'s (``queue``,
        ``priority``, ``run_at``, ...)."""
        [job] = await self.insert_many([InsertSpec(args=args, **options)])
        return job

    async def insert_many(self, items: Sequence[Any | InsertSpec]) -> list[JobRecord]:
        jobs = self.client._requests.new_jobs(items)
        return await asyncio.to_thread(self.store.insert, jobs)

    async def get_job(self, job_id: int) -> JobRecord:
        return await self.client.get_job(job_id)

    async def list_jobs(self, **filters: Any) -> list[JobRecord]:
        return await self.client.list_jobs(**filters)

    # -- running handlers -------------------------------------------------------------------
    async def work_one(
        self, queue: str | None = None, *, timeout_s: float = HANDLER_TIMEOUT_S
    ) -> WorkResult | None:
        """Run one due job (of ``queue``, or of any queue a task is registered on, queue by
        queue in name order) to the end of its handler and write its outcome; ``None`` when
        no job is due. ``timeout_s`` bounds, in real time, a handler that never returns."""
        results = await self._work(queue, jobs_max=1, timeout_s=timeout_s)
        return results[0] if results else None

    async def work_all(
        self,
        queue: str | None = None,
        *,
        jobs_max: int = _WORK_ALL_MAX,
        timeout_s: float = HANDLER_TIMEOUT_S,
    ) -> list[WorkResult]:
        """Run due jobs one after another until none is due (time does not move, so a
        retry waits for ``advance``); at most ``jobs_max``, beyond which a handler that keeps
        making work due is reported with ``RuntimeError``."""
        results = await self._work(queue, jobs_max=jobs_max + 1, timeout_s=timeout_s)
        if len(results) > jobs_max:
            raise RuntimeError(
                f"work_all ran {jobs_max} jobs and more are due: does a handler keep"
                " inserting or snoozing work that is due at once?"
            )
        return results

    def advance(self, seconds: float | None = None) -> datetime:
        """Move time forward by ``seconds`` so that retries, snoozes and scheduled jobs come
        due; without ``seconds``, to the moment the next of them is due. Returns the time."""
        if seconds is not None:
            return self.clock.advance(seconds)
        upcoming = [
            job.run_at
            for state in _WAITING
            for job in self.store.list_jobs(state=state, limit=BATCH_SIZE_MAX)
        ]
        if not upcoming:
            raise ValidationError("no scheduled or retryable job to advance to")
        return self.clock.set(max(min(upcoming), self.clock.now()))

    # -- the worker underneath ----------------------------------------------------------------
    def _runtime(self, queue: str | None) -> Runtime:
        queues = [queue] if queue is not None else sorted(self.registry.queues())
        if not queues:
            raise ValidationError("register a handler (test_client.task) before working jobs")
        configs = [
            QueueConfig(
                queue=name,
                concurrency=1,
                dlq_enabled=self._dlq_enabled,
                deadline_duration_s=self._deadline_duration_s,
            )
            for name in queues
        ]
        return Runtime(
            self.store,
            self.registry,
            configs,
            clock=self.clock,
            config=RuntimeConfig(run_maintenance=False),
            owner="awa-test-client",
            inline_store_calls=True,
        )

    async def _work(
        self, queue: str | None, *, jobs_max: int, timeout_s: float
    ) -> list[WorkResult]:
        runtime = self._runtime(queue)
        await runtime.attach()
        results: list[WorkResult] = []
        try:
            while len(results) < jobs_max:
                result = await self._run_one(runtime, timeout_s)
                if result is None:
                    break
                results.append(result)
        finally:
            await runtime.detach()
        return results

    async def _run_one(self, runtime: Runtime, timeout_s: float) -> WorkResult | None:
        for name in runtime.queues:
            await runtime.run_service(f"claim:{name}", self.clock.now())
            # a job that cannot run (no handler, args that do not fit) has its outcome at once
            started = [a.lease for a in runtime.attempts()] or runtime.table.pending_finishes()
            if started:
                break
        else:
            return None
        [lease] = started
        try:
            await asyncio.wait_for(runtime.table.idle.wait(), timeout_s)
        except asyncio.TimeoutError:
            raise TimeoutError(
                f"the handler of job {lease.job_id} was still running after {timeout_s:g}s"
            ) from None
        pending = [p for p in runtime.table.pending_outcomes() if p.finish.lease == lease]
        while runtime.has_finishes():
            await runtime.run_service("complete", self.clock.now())
        job = await asyncio.to_thread(self.store.get_job, lease.job_id)
        return WorkResult(job, pending[0].finish.outcome if pending else None)


def _postgres(url: str, clock: ManualClock) -> ClaimStore:
    from awa.adapters.postgres import PostgresStore

    store = PostgresStore(url, clock=clock)
    if isinstance(store, Migrates):
        store.migrate()
    return store


class _JobOptions(TypedDict, total=False):
    """``make_job``'s keywords but ``sync``, for its overloads, which differ only in that."""

    kind: str | None
    queue: str | None
    attempt: int
    priority: int | None
    max_attempts: int | None
    tags: Sequence[str]
    metadata: Mapping[str, Any] | None
    clock: ManualClock | None


@overload
def make_job(
    args: Any, *, sync: Literal[False] = False, **options: Unpack[_JobOptions]
) -> Job[Any]: ...
@overload
def make_job(args: Any, *, sync: Literal[True], **options: Unpack[_JobOptions]) -> SyncJob[Any]: ...
def make_job(
    args: Any,
    *,
    sync: bool = False,
    kind: str | None = None,
    queue: str | None = None,
    attempt: int = 1,
    priority: int | None = None,
    max_attempts: int | None = None,
    tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    clock: ManualClock | None = None,
) -> Job[Any] | SyncJob[Any]:
    """A running job to call a handler with directly: ``await handler(make_job(args))``.

    ``args`` is handed to the handler as given; the job is stored and claimed in a memory
    store of its own, so everything a handler does with it works (``set_progress``,
    ``flush_progress``, ``register_callback``...). ``attempt`` is the attempt the handler
    sees (the n-th try of the job); ``sync=True`` gives a ``SyncJob`` for a sync handler."""
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise ValidationError(f"attempt must be a positive integer, got {attempt!r}")
    clock = clock if clock is not None else ManualClock()
    store = MemoryStore(clock)
    spec = InsertSpec(
        args=args,
        kind=kind,
        queue=queue,
        priority=priority,
        max_attempts=max_attempts,
        tags=tags,
        metadata=metadata,
    )
    [new] = AsyncClient(store=store)._requests.new_jobs([spec])
    if attempt > new.max_attempts:
        raise ValidationError(f"attempt {attempt} is past max_attempts {new.max_attempts}")
    store.insert([new])
    [claimed] = store.claim(new.queue, limit=1, deadline_duration_s=DEADLINE_S)
    record = attrs.evolve(claimed, attempt=attempt)  # the lease (and so every write) is real
    running = Attempt(record, QueueConfig(queue=new.queue), is_async=not sync, now=clock.now())
    services = HandlerServices(
        store, clock, StoreCalls(inline=True, timeout_s=HANDLER_TIMEOUT_S), _waiter(clock)
    )
    return SyncJob(running, args, services) if sync else Job(running, args, services)


def _waiter(clock: ManualClock) -> Callable[[asyncio.Event, float], Any]:
    """How a job waits for its callback's answer: on the event, or until the clock says."""
    scheduler = Scheduler(clock, [])

    async def wait(event: asyncio.Event, seconds: float) -> None:
        await scheduler.wait(event, seconds)

    return wait
