"""The worker runtime: one scheduler that owns all waiting, over the services that do work.

Everything here runs on one event loop. Store calls go to a small thread pool (the port is
synchronous), sync handlers to another, async handlers run as tasks. Time comes from the
injected ``Clock``, so the whole runtime runs under a ``ManualClock`` in tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, TypeVar

import attrs

from awa.domain import Fail, Lease, Outcome, SerializationError
from awa.domain import Job as JobRecord
from awa.ports import (
    CallbackResolved,
    CancelRequested,
    ClaimStore,
    Clock,
    Event,
    Finish,
    JobsAvailable,
    SystemClock,
)
from awa.runtime.attempts import Attempt, AttemptEnded
from awa.runtime.config import QueueConfig, RuntimeConfig
from awa.runtime.context import Job, SyncJob
from awa.runtime.heartbeats import HeartbeatService, LoopWatch, OffLoopHeartbeats
from awa.runtime.outcomes import outcome_from_exception, outcome_from_return
from awa.runtime.registry import Task, TaskRegistry
from awa.runtime.serialization import load_args
from awa.runtime.services import (
    ClaimService,
    CompletionService,
    DeadlineService,
    MaintenanceService,
    Service,
)
from awa.runtime.store_calls import StoreCalls

__all__ = ["Runtime", "RuntimeStats"]

log = logging.getLogger("awa.runtime")
R = TypeVar("R")

_ERROR_BACKOFF_S = 1.0


@attrs.define
class RuntimeStats:
    claimed: int = 0
    finished: int = 0
    stale_finishes: int = 0
    dropped: int = 0
    rescued: int = 0


@attrs.define
class _Slot:
    """Scheduling state of one service."""

    service: Service
    due_at: datetime | None
    woken: bool = False
    task: asyncio.Task[None] | None = None


class Runtime:
    def __init__(
        self,
        store: ClaimStore,
        registry: TaskRegistry,
        queues: Sequence[QueueConfig],
        *,
        clock: Clock,
        config: RuntimeConfig | None = None,
        owner: str | None = None,
        inline_store_calls: bool = False,
    ) -> None:
        if not queues:
            raise ValueError("start needs at least one (queue, concurrency) pair")
        self.store = store
        self.registry = registry
        self.clock = clock
        self.config = config or RuntimeConfig()
        self.queues = {q.queue: q for q in queues}
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.stats = RuntimeStats()
        # inline: store calls run on the loop thread, for deterministic simulation
        self.store_call = StoreCalls(
            inline=inline_store_calls, timeout_s=self.config.store_call_timeout_s
        )
        # real time: heartbeats from a thread, so a blocked loop cannot starve them; under a
        # manual clock or in a simulation they are a scheduled service like the others
        self._real_time = not inline_store_calls and isinstance(clock, SystemClock)
        self._attempts: dict[Lease, Attempt] = {}
        self._running: Counter[str] = Counter()
        self._finishes: list[Finish] = []
        sync_slots = sum(q.concurrency for q in queues)
        self._handler_pool = ThreadPoolExecutor(sync_slots, thread_name_prefix="awa-handler")
        self._claimers = {q.queue: ClaimService(self, q) for q in queues}
        self._maintenance = MaintenanceService(
            self, self.config, max(q.heartbeat_staleness_s for q in queues)
        )
        self._heartbeats = HeartbeatService(self, min(q.heartbeat_interval_s for q in queues))
        services: list[Service] = [
            *self._claimers.values(),
            CompletionService(self),
            *([] if self._real_time else [self._heartbeats]),
            DeadlineService(self, self.config.deadline_grace_s),
        ]
        if self.config.run_maintenance:
            services.append(self._maintenance)
        self._off_loop_heartbeats: OffLoopHeartbeats | None = None
        self._loop_watch: LoopWatch | None = None
        self._slots = {s.name: _Slot(s, due_at=None) for s in services}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._scheduler: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._idle: asyncio.Event | None = None

    # -- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        """Attach to the store and start the scheduler."""
        await self.attach()
        self._scheduler = asyncio.create_task(self._schedule(), name="awa-scheduler")

    async def attach(self) -> None:
        """Everything ``start`` does except scheduling: a simulation then drives the
        services' ``run_once`` steps itself."""
        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        for queue in self.queues.values():
            await self.store_call(self.store.set_dlq_enabled, queue.queue, queue.dlq_enabled)
        # off the loop: on PostgreSQL this opens the listening connection and waits for LISTEN
        self._unsubscribe = await self.store_call(self.store.subscribe, self._on_event_threadsafe)
        now = self.clock.now()
        for slot in self._slots.values():
            slot.due_at = now
        if self._real_time:
            self._off_loop_heartbeats = OffLoopHeartbeats(self._heartbeats, self._loop)
            self._off_loop_heartbeats.start()
            self._loop_watch = LoopWatch(
                self._loop, self.config.loop_block_warning_s, self._attempt_of_task
            )
            self._loop_watch.start()

    async def shutdown(self, timeout: float = 30.0) -> None:
        """Stop claiming; let running handlers finish (heartbeats go on) for up to
        ``timeout`` seconds; flush their outcomes; abandon what is left (it will be rescued)."""
        for claimer in self._claimers.values():
            claimer.draining = True
        # a claim already on its way may still start handlers: let it land first
        await self._settle([self._slots[c.name] for c in self._claimers.values()])
        if self._attempts and timeout > 0:
            await self.wait(self._idle_event(), timeout)
        for attempt in list(self._attempts.values()):
            log.warning("shutdown: abandoning job %s (it will be rescued)", attempt.lease)
            attempt.end(cancelled=False)
            self._release(attempt)
        await self._stop_scheduler()
        await self._settle(list(self._slots.values()))
        while self.has_finishes():
            await self._slots["complete"].service.run_once(self.clock.now())
        await self._close(resign=True)

    async def abandon(self) -> None:
        """Stop at once and write nothing, as if the process were killed (for tests)."""
        for attempt in list(self._attempts.values()):
            attempt.end(cancelled=False)
        self._finishes.clear()
        await self._stop_scheduler()
        running = [s.task for s in self._slots.values() if s.task is not None]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await self._close(resign=False)

    async def _stop_scheduler(self) -> None:
        if self._scheduler is not None:
            self._scheduler.cancel()
            await asyncio.gather(self._scheduler, return_exceptions=True)
            self._scheduler = None

    async def _settle(self, slots: list[_Slot]) -> None:
        """Wait for these services' runs in progress to end on their own."""
        running = [s.task for s in slots if s.task is not None]
        await asyncio.gather(*running, return_exceptions=True)

    async def _close(self, *, resign: bool) -> None:
        if self._off_loop_heartbeats is not None:
            self._off_loop_heartbeats.stop()
        if self._loop_watch is not None:
            self._loop_watch.stop()
        if self._unsubscribe is not None:
            self._unsubscribe()
        if resign and self.config.run_maintenance:
            await self.store_call(self._maintenance.resign)
        self.store_call.shutdown()
        self._handler_pool.shutdown(wait=False)

    # -- the scheduler: the one place that waits --------------------------------------------
    def ready_services(self, now: datetime) -> list[str]:
        """Services not running now that were woken or whose time has come."""
        return [
            name
            for name, slot in self._slots.items()
            if slot.task is None
            and (slot.woken or (slot.due_at is not None and slot.due_at <= now))
        ]

    def next_due(self) -> datetime | None:
        """The earliest moment an idle service wants to run."""
        return min(
            (s.due_at for s in self._slots.values() if s.task is None and s.due_at is not None),
            default=None,
        )

    async def run_service(self, name: str, now: datetime) -> None:
        """One ``run_once`` of a service, then its next due time: measured from when the run
        started, so a slow store call does not stretch the period."""
        slot = self._slots[name]
        slot.woken = False
        try:
            delay_s = await slot.service.run_once(now)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s failed; retrying in %ss", name, _ERROR_BACKOFF_S)
            delay_s = _ERROR_BACKOFF_S
        slot.due_at = None if delay_s is None else now + timedelta(seconds=delay_s)

    async def _schedule(self) -> None:
        assert self._wakeup is not None
        while True:
            self._wakeup.clear()
            now = self.clock.now()
            for name in self.ready_services(now):
                slot = self._slots[name]
                slot.task = asyncio.create_task(self._run(name, now))
            await self._wait_until(self._wakeup, self.next_due())

    async def _run(self, name: str, now: datetime) -> None:
        try:
            await self.run_service(name, now)
        finally:
            self._slots[name].task = None
            self._kick()

    def wake(self, name: str) -> None:
        slot = self._slots.get(name)
        if slot is not None:
            slot.woken = True
            self._kick()

    def _kick(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    async def wait(self, event: asyncio.Event, seconds: float) -> None:
        """Until ``event`` is set or ``seconds`` pass on the runtime's clock."""
        await self._wait_until(event, self.clock.now() + timedelta(seconds=seconds))

    async def _wait_until(self, event: asyncio.Event, when: datetime | None) -> None:
        if event.is_set():
            return
        waiters: set[asyncio.Future[Any]] = {asyncio.ensure_future(event.wait())}
        if when is not None:
            waiters.add(asyncio.ensure_future(self.clock.sleep_until(when)))
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    # -- store access -----------------------------------------------------------------------
    def service(self, name: str) -> Service:
        """A service by name: ``claim:<queue>``, ``complete``, ``heartbeat``, ``deadlines``,
        ``maintenance``."""
        return self._slots[name].service

    # -- hints from the store ---------------------------------------------------------------
    def _on_event_threadsafe(self, event: Event) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            # the loop may close between the check and the call
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._on_event, event)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, JobsAvailable):
            self.wake(f"claim:{event.queue}")
        elif isinstance(event, CancelRequested):
            attempt = self._attempts.get(event.lease)
            if attempt is not None:
                attempt.end(cancelled=True)
        elif isinstance(event, CallbackResolved):
            attempt = self._attempts.get(event.lease)
            if attempt is not None:
                attempt.signal_callback()

    # -- attempts ---------------------------------------------------------------------------
    def attempts(self) -> Iterable[Attempt]:
        return list(self._attempts.values())

    def running(self, queue: str) -> int:
        return self._running[queue]

    def start_attempt(self, config: QueueConfig, record: JobRecord) -> None:
        self.stats.claimed += 1
        task = self.registry.for_kind(record.kind)
        attempt = Attempt(
            record, config, is_async=task is not None and task.is_async, now=self.clock.now()
        )
        self._attempts[attempt.lease] = attempt
        self._running[config.queue] += 1
        self._idle_event().clear()
        if task is None:
            known = ", ".join(sorted(k for k in self._kinds())) or "none"
            error = (
                f"UnknownJobKind: no handler for kind {record.kind!r} (this worker has: {known})"
            )
            self._attempt_done(attempt, Fail(error, terminal=True))
            return
        try:
            args = load_args(record.args, task.args_type)
        except SerializationError as exc:
            self._attempt_done(attempt, Fail(f"SerializationError: {exc}", terminal=True))
            return
        if task.is_async:
            attempt.future = asyncio.ensure_future(self._run_async(attempt, task, args))
        else:
            future = asyncio.get_running_loop().run_in_executor(
                self._handler_pool, self._run_sync, attempt, task, args
            )
            attempt.future = future
            future.add_done_callback(functools.partial(self._sync_done, attempt))

    def _kinds(self) -> Iterable[str]:
        return (t.kind for t in self.registry.all())

    async def _run_async(self, attempt: Attempt, task: Task, args: Any) -> None:
        outcome: Outcome | None
        try:
            outcome = outcome_from_return(await task.handler(Job(attempt, args, self)))
        except (AttemptEnded, asyncio.CancelledError):
            outcome = None
        except BaseException as exc:  # a handler's panic must not take the runtime down
            outcome = outcome_from_exception(exc)
        self._attempt_done(attempt, outcome)

    def _run_sync(self, attempt: Attempt, task: Task, args: Any) -> Outcome | None:
        try:
            return outcome_from_return(task.handler(SyncJob(attempt, args, self)))
        except AttemptEnded:
            return None
        except BaseException as exc:  # e.g. SystemExit in a handler thread: a panic
            return outcome_from_exception(exc)

    def _sync_done(self, attempt: Attempt, future: asyncio.Future[Outcome | None]) -> None:
        if future.cancelled():
            self._attempt_done(attempt, None)
        else:
            self._attempt_done(attempt, future.result())

    def _attempt_done(self, attempt: Attempt, outcome: Outcome | None) -> None:
        if attempt.dropped:
            return
        self._release(attempt)
        if outcome is None or attempt.ended:
            return
        progress, metadata = attempt.take_buffers()
        self._finishes.append(Finish(attempt.lease, outcome, progress, metadata))
        self.wake("complete")

    def _release(self, attempt: Attempt) -> None:
        if self._attempts.pop(attempt.lease, None) is None:
            return
        self._running[attempt.config.queue] -= 1
        self.wake(f"claim:{attempt.config.queue}")
        if not self._attempts:
            self._idle_event().set()

    def drop_attempt(self, attempt: Attempt) -> None:
        """Give up on a handler past its deadline: cancel it and free its slot, write
        nothing; maintenance counts the attempt as ``hard deadline exceeded``."""
        log.warning("job %s is past its deadline; dropping its handler", attempt.lease)
        self.stats.dropped += 1
        attempt.end(cancelled=False)
        self._release(attempt)
        attempt.dropped = True

    def _attempt_of_task(self, task: asyncio.Task[object] | None) -> Attempt | None:
        """The attempt whose async handler runs as ``task`` (any thread may ask)."""
        for attempt in list(self._attempts.values()):
            if attempt.future is task:
                return attempt
        return None

    def _idle_event(self) -> asyncio.Event:
        assert self._idle is not None, "the runtime has not started"
        return self._idle

    # -- finishes ---------------------------------------------------------------------------
    def take_finishes(self, limit: int) -> list[Finish]:
        batch, self._finishes = self._finishes[:limit], self._finishes[limit:]
        return batch

    def requeue_finishes(self, batch: list[Finish]) -> None:
        self._finishes[:0] = batch

    def has_finishes(self) -> bool:
        return bool(self._finishes)

    def pending_finishes(self) -> list[Lease]:
        """Attempts whose outcome is decided but not yet written."""
        return [finish.lease for finish in self._finishes]
