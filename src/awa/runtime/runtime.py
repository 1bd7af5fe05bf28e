"""The worker runtime: the composition of one worker process.

``Scheduler`` owns all waiting; ``AttemptTable`` holds the attempts this process runs and the
outcomes waiting to be written; ``Dispatch`` turns claimed jobs into running handlers; the
services (``services.py``, ``heartbeats.py``) do the work, each given only what it uses. This
module wires them, starts and stops them, and routes the store's hints.

Everything here runs on one event loop. Store calls go to a small thread pool (the port is
synchronous), sync handlers to another, async handlers run as tasks. Time comes from the
injected ``Clock``, so the whole runtime runs under a ``ManualClock`` in tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from awa.domain import AwaError, Lease, Schedule, Snooze, ValidationError
from awa.ports import (
    Applied,
    CallbackResolved,
    CancelRequested,
    ClaimStore,
    Clock,
    Event,
    Finish,
    JobsAvailable,
    Listens,
    SystemClock,
    TracksWorkers,
)
from awa.runtime.attempt_table import AttemptTable
from awa.runtime.attempts import Attempt
from awa.runtime.config import QueueConfig, RuntimeConfig
from awa.runtime.context import HandlerServices
from awa.runtime.dispatch import Dispatch, ended_without_write
from awa.runtime.heartbeats import HeartbeatService, LoopWatch, OffLoopHeartbeats
from awa.runtime.logs import AttemptLog
from awa.runtime.observe import Ending, Observer, Observers
from awa.runtime.periodic import PeriodicService
from awa.runtime.presence import PresenceService
from awa.runtime.registry import TaskRegistry
from awa.runtime.scheduler import Scheduler, Service
from awa.runtime.services import (
    ClaimService,
    CompletionService,
    DeadlineService,
    MaintenanceService,
    QueueClaims,
    claim_service_names,
)
from awa.runtime.stats import RuntimeStats
from awa.runtime.store_calls import StoreCalls
from awa.runtime.weighted import shared_slots

__all__ = ["Runtime", "RuntimeStats"]

log = logging.getLogger("awa.runtime")


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
        observers: Sequence[Observer] = (),
        schedules: Sequence[Schedule] = (),
    ) -> None:
        """``observers`` hear every event of the worker (``awa.runtime.observe``), after the
        per-attempt log lines (``awa.runtime.logs.AttemptLog``) that every worker writes.
        ``schedules`` are registered with the store when the runtime attaches; whichever
        process leads maintenance fires them."""
        if not queues:
            raise ValidationError("start needs at least one (queue, concurrency) pair")
        registry.check_workable([q.queue for q in queues])
        self.store = store
        self.registry = registry
        self.clock = clock
        self.config = config = config or RuntimeConfig()
        self.queues = {q.queue: q for q in queues}
        self.schedules = list(schedules)
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.stats = RuntimeStats()
        self.observers = Observers([AttemptLog(), *observers])
        # inline: store calls run on the loop thread, for deterministic simulation
        self.store_call = StoreCalls(
            inline=inline_store_calls, timeout_s=config.store_call_timeout_s
        )
        # real time: heartbeats from a thread, so a blocked loop cannot starve them; under a
        # manual clock or in a simulation they are a scheduled service like the others
        self._real_time = not inline_store_calls and isinstance(clock, SystemClock)

        #: each queue's claim services (``QueueConfig.claimers``), woken together
        self._claim_slots = {q.queue: claim_service_names(q) for q in queues}
        self.table = AttemptTable(on_released=self._slot_freed)
        #: with ``global_max_workers``: the slots the queues share (``awa.runtime.weighted``)
        self.shared = shared_slots(config.global_max_workers, queues, self.table, self._wake_claims)
        slots_total = sum(q.concurrency for q in queues)
        if self.shared is not None:
            slots_total = min(slots_total, self.shared.total)
        self.dispatch = Dispatch(
            registry,
            self.table,
            HandlerServices(store, clock, self.store_call, self.wait),
            handler_threads=slots_total,
            on_outcome=self._outcome_waiting,
            observers=self.observers,
        )
        self._claimers: dict[str, list[ClaimService]] = {}
        for q in queues:
            claims = QueueClaims(q, self.table)
            # a queue's own bound on a claim is under the process's, never over it
            batch_max = min(config.claim_batch_max, q.claim_batch_size or config.claim_batch_max)
            self._claimers[q.queue] = [
                ClaimService(
                    q,
                    store,
                    self.store_call,
                    self.table,
                    self.dispatch,
                    self.observers,
                    batch_max=batch_max,
                    claimed=self._claimed,
                    clock=self.clock,
                    shared=self.shared,
                    held_back=self._held_back,
                    claims=claims,
                    name=name,
                )
                for name in self._claim_slots[q.queue]
            ]
        self._heartbeats = HeartbeatService(
            self.table,
            store,
            self.store_call,
            interval_s=min(q.heartbeat_interval_s for q in queues),
        )
        self._maintenance = MaintenanceService(
            store,
            self.store_call,
            config,
            self.stats,
            self.observers,
            owner=self.owner,
            staleness_s=max(q.heartbeat_staleness_s for q in queues),
        )
        services: list[Service] = [
            *(claimer for claimers in self._claimers.values() for claimer in claimers),
            CompletionService(
                store,
                self.store_call,
                self.table,
                self.stats,
                self.observers,
                batch_max=config.finish_batch_max,
                finished=self._finished,
            ),
            *([] if self._real_time else [self._heartbeats]),
            DeadlineService(
                self.table, self.dispatch.drop, self.stats, grace_s=config.deadline_grace_s
            ),
        ]
        if config.run_maintenance:
            services.append(self._maintenance)
            services.append(
                PeriodicService(store, self.store_call, config, self.stats, owner=self.owner)
            )
        self._presence: PresenceService | None = None
        if isinstance(store, TracksWorkers):
            self._presence = PresenceService(
                store,
                self.store_call,
                owner=self.owner,
                queues=self.queues,
                tasks=registry.all(),
                interval_s=config.maintenance_interval_s,
            )
            services.append(self._presence)
        self.scheduler = Scheduler(clock, services)
        self._off_loop_heartbeats: OffLoopHeartbeats | None = None
        self._loop_watch: LoopWatch | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._stopping = False

    # -- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        """Attach to the store and start the scheduler."""
        await self.attach()
        self.scheduler.start()

    async def attach(self) -> None:
        """Everything ``start`` does except scheduling: a simulation then drives the
        services' ``run_once`` steps itself."""
        self._loop = asyncio.get_running_loop()
        self.table.attach()
        await self._store_queue_settings()
        if self.schedules:
            await self.store_call(self.store.register_schedules, self.schedules)
        if isinstance(self.store, Listens):  # else claims, cancels and callbacks are polled
            # off the loop: on PostgreSQL this opens the listening connection, waits for LISTEN
            listen = self.store.subscribe
            self._unsubscribe = await self.store_call(listen, self._on_event_threadsafe)
        self.scheduler.attach(self.clock.now())
        if self._real_time:
            self._off_loop_heartbeats = OffLoopHeartbeats(self._heartbeats, self._loop, self.clock)
            self._off_loop_heartbeats.start()
            self._loop_watch = LoopWatch(
                self._loop, self.config.loop_block_warning_s, self.table.of_task
            )
            self._loop_watch.start()
        self.observers.worker_handles({task.kind: task.queue for task in self.registry.all()})
        self.observers.worker_started(self.owner, list(self.queues))

    async def _store_queue_settings(self) -> None:
        """The settings the queue configs give, stored with their queues (for every process),
        only when given. A rate limit is left out when the queue already has that one: a rate
        stored again starts a full bucket (``configure_queue``), and a fleet whose workers
        each store it at start would let one burst through per worker started."""
        wanted = {q.queue: s for q in self.queues.values() if (s := q.stored_settings())}
        if any("rate_limit" in settings for settings in wanted.values()):
            stats = await self.store_call(self.store.queue_stats)
            current = {st.queue: st.rate_limit for st in stats}
            for queue, settings in wanted.items():
                if "rate_limit" in settings and current.get(queue) == settings["rate_limit"]:
                    del settings["rate_limit"]
        for queue, settings in wanted.items():
            if settings:
                await self.store_call(self.store.configure_queue, queue, **settings)

    async def shutdown(self, timeout: float = 30.0) -> None:
        """Stop claiming; let running handlers finish (heartbeats go on) for up to
        ``timeout`` seconds; flush their outcomes. Handlers still running then are cancelled
        (async) or left to return into nothing (sync), and their attempts are released
        (row 22): another worker takes them at once, each with the attempt counted."""
        self._stopping = True
        claimers = [claimer for queue in self._claimers.values() for claimer in queue]
        for claimer in claimers:
            claimer.draining = True
        # a claim already on its way may still start handlers: let it land first
        await self.scheduler.settle([c.name for c in claimers])
        await self._hand_back_waiting()
        if self.table.attempts() and timeout > 0:
            await self.wait(self.table.idle, timeout)
        released = await self._release_running()
        await self.scheduler.stop()
        await self.scheduler.settle()
        while self.table.has_finishes():
            await self.scheduler.service("complete").run_once(self.clock.now())
        await self._close(resign=True)
        self.observers.worker_stopped(self.owner, released)

    async def _hand_back_waiting(self) -> None:
        """Jobs claimed ahead whose handlers never started go back at once, with their attempt
        given back (row 8 with no delay: nothing ran, so nothing is spent or recorded)."""
        waiting = self.table.take_waiting()
        if not waiting:
            return
        for attempt in waiting:
            attempt.end(cancelled=False)
        try:
            await self.store_call(self.store.finish, [Finish(a.lease, Snooze(0)) for a in waiting])
        except AwaError as exc:  # the database is away: maintenance rescues them instead
            log.warning(
                "shutdown: handing back %d jobs claimed ahead failed (%s); they will be rescued",
                len(waiting),
                exc,
            )

    async def _release_running(self) -> int:
        """Row 22 for every attempt whose handler is still running; how many were released."""
        running = self.table.attempts()
        if not running:
            return 0
        for attempt in running:
            attempt.end(cancelled=False)
            self.table.release(attempt)
        try:
            results = await self.store_call(self.store.release, [a.lease for a in running])
        except AwaError as exc:  # the database is away: maintenance rescues them instead
            log.warning(
                "shutdown: releasing %d attempts failed (%s); they will be rescued",
                len(running),
                exc,
            )
            return 0
        released = 0
        for attempt, result in zip(running, results, strict=True):
            if isinstance(result, Applied):
                released += 1
                if self.observers.hears(Ending.RELEASED):
                    ended = ended_without_write(attempt, Ending.RELEASED, result.job)
                    self.observers.attempt_ended(ended)
        return released

    async def detach(self) -> None:
        """Undo ``attach`` once nothing runs any more: stop listening and release the threads,
        keeping the maintenance leadership as it is (``awa.testing.TestClient`` between its
        steps)."""
        await self._close(resign=False)

    async def abandon(self) -> None:
        """Stop at once and write nothing, as if the process were killed (for tests)."""
        for attempt in self.table.attempts():
            attempt.end(cancelled=False)
        self.table.drop_finishes()
        await self.scheduler.stop()
        await self.scheduler.cancel_runs()
        await self._close(resign=False)

    async def _close(self, *, resign: bool) -> None:
        if self._off_loop_heartbeats is not None:
            self._off_loop_heartbeats.stop()
        if self._loop_watch is not None:
            self._loop_watch.stop()
        if self._unsubscribe is not None:
            self._unsubscribe()
        if resign and self.config.run_maintenance:
            await self.store_call(self._maintenance.resign)
        if resign and self._presence is not None:
            await self._presence.forget()
        self.store_call.shutdown()
        self.dispatch.shutdown()

    # -- health (``awa.runtime.health``) -----------------------------------------------------
    @property
    def working(self) -> bool:
        """Started, and not shutting down."""
        return self.scheduler.running and not self._stopping

    @property
    def scheduler_alive(self) -> bool:
        """The scheduling loop runs, or this runtime never started it or stopped it on
        purpose (a crashed loop is the one thing a restart would cure)."""
        return self.scheduler.running or not self.scheduler.crashed

    def succeeded_at(self) -> dict[str, datetime | None]:
        """When each service last ran without failing, heartbeats included."""
        runs = self.scheduler.succeeded_at()
        if self._off_loop_heartbeats is not None:
            runs["heartbeat"] = self._off_loop_heartbeats.succeeded_at
        return runs

    def slots(self) -> dict[str, tuple[int, int]]:
        """``(in use, concurrency)`` of each queue."""
        return {name: (self.table.running(name), q.concurrency) for name, q in self.queues.items()}

    # -- the scheduler's surface (a simulation drives it step by step) -----------------------
    def ready_services(self, now: datetime) -> list[str]:
        return self.scheduler.ready(now)

    def next_due(self) -> datetime | None:
        return self.scheduler.next_due()

    async def run_service(self, name: str, now: datetime) -> None:
        await self.scheduler.run(name, now)

    def service(self, name: str) -> Service:
        """A service by name: ``claim:<queue>`` (and ``claim:<queue>#2`` on, one per further
        claimer), ``complete``, ``heartbeat``, ``deadlines``,
        ``maintenance``, ``periodic``, ``presence`` (on a store that tracks workers)."""
        return self.scheduler.service(name)

    def wake(self, name: str) -> None:
        self.scheduler.wake(name)

    async def wait(self, event: asyncio.Event, seconds: float) -> None:
        """Until ``event`` is set or ``seconds`` pass on the runtime's clock."""
        await self.scheduler.wait(event, seconds)

    # -- hints from the store ---------------------------------------------------------------
    def _on_event_threadsafe(self, event: Event) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            # the loop may close between the check and the call
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._on_event, event)

    def _on_event(self, event: Event) -> None:
        if isinstance(event, JobsAvailable):
            if self.shared is not None and event.queue in self.queues:
                self.shared.work_arrived(event.queue)
            self._wake_claims(event.queue)
        elif isinstance(event, CancelRequested):
            attempt = self.table.get(event.lease)
            if attempt is not None:
                attempt.end(cancelled=True)
        elif isinstance(event, CallbackResolved):
            attempt = self.table.get(event.lease)
            if attempt is not None:
                attempt.signal_callback()

    # -- attempts (called once per job: straight to the scheduler) ------------------------------
    def _claimed(self, taken: int, ahead: int) -> None:
        self.stats.claimed += taken
        self.stats.claimed_ahead += ahead
        self.scheduler.wake("deadlines")  # it looks at the new attempts

    def _held_back(self, counts: Mapping[str, Mapping[str, int]]) -> None:
        """The store's flow limits held jobs back (``ClaimService``): their queues' claims
        are throttled until an outcome gives a slot back, and the observers hear of it."""
        for queue, held in counts.items():
            for claimer in self._claimers.get(queue, ()):
                claimer.throttled = True
            if held and self.observers:
                self.observers.claims_held_back(queue, held)

    def _finished(self, queues: Mapping[str, bool]) -> None:
        """Outcomes of these queues were written (``True``: one had an ordering key). A
        throttled queue, or one whose ordering key just moved on, claims again at once: the
        slot this process saw freed when its handler returned is free in the store only now,
        and the claim it made at that moment found it taken (limits and ordering count the
        store's live attempts, not this process's)."""
        for queue, ordered in queues.items():
            claimers = self._claimers.get(queue, ())
            if ordered or any(claimer.throttled for claimer in claimers):
                self._wake_claims(queue)

    def _slot_freed(self, queue: str) -> None:
        loop = self._loop
        if loop is not None and self.table.waiting(queue) and not self._stopping:
            # a job claimed ahead takes the slot now, not when the claim service next runs
            # (it may be waiting on a claim's round trip); soon, not here, since a job
            # that fails at once frees a slot again
            loop.call_soon(self._start_waiting, queue)
        self._wake_claims(queue)
        if self.shared is not None:  # the slot may be another queue's share now
            self.shared.freed()

    def _wake_claims(self, queue: str) -> None:
        """Wake every claim service of ``queue``: each claims what the others have not asked
        for (``QueueClaims``), and one with nothing left to ask for goes back to sleep."""
        for name in self._claim_slots.get(queue, ()):
            self.scheduler.wake(name)

    def _start_waiting(self, queue: str) -> None:
        config = self.queues[queue]
        if not self._stopping and self.table.running(queue) < config.concurrency:
            self.dispatch.start_waiting(queue)

    def _outcome_waiting(self) -> None:
        self.scheduler.wake("complete")

    def attempts(self) -> list[Attempt]:
        return self.table.attempts()

    def running(self, queue: str) -> int:
        return self.table.running(queue)

    def has_finishes(self) -> bool:
        return self.table.has_finishes()

    def pending_finishes(self) -> list[Lease]:
        """Attempts whose outcome is decided but not yet written."""
        return self.table.pending_finishes()
