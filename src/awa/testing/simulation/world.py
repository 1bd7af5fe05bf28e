"""Deterministic simulation: the real runtime in a seeded world of crashes and stalls.

Every worker process is a real ``awa.runtime.Runtime`` attached to one in-memory store (with
inline store calls) under one ``ManualClock``. A single seeded scheduler picks every step: which
process runs which service (claim, complete, heartbeat, deadlines, maintenance), which handler
finishes with which outcome, when the external system answers a callback, when time passes,
and when a fault strikes. The same seed gives the same history, byte for byte.

Scheduling runs in the same world (``scheduling.py``): every process registers two periodic
schedules, which its maintenance leader plans and fires in two separate steps, and producers
insert unique jobs from a handful of keys. A paused process (a long GC, SIGSTOP) loses its
leadership while it may hold a plan; a crash drops it.

``store_factory`` puts another ``ClaimStore`` under the same world, built on the simulation's
clock (e.g. ``PostgresStore(url, clock=clock, rng=rng)``). The laws are checked the same way;
byte-for-byte repeatability then holds only if the store's hints arrive deterministically,
which PostgreSQL's do not (notifications come on the listener's thread).

The world's parts: its ``processes`` (the ``Fleet`` of runtimes), the ``actors`` (the handler,
the external system, the producers), the ``faults`` it suffers, the final ``checks`` and the
``report``. This module is the scheduler that picks every step and moves the clock.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from collections.abc import Callable
from datetime import datetime, timedelta

from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import NewJob
from awa.ports import ClaimStore
from awa.runtime.registry import TaskRegistry
from awa.testing.simulation.actors import Handlers, produce
from awa.testing.simulation.checks import check_final_state
from awa.testing.simulation.faults import FaultInjector, Faults
from awa.testing.simulation.processes import KINDS, QUEUES, Action, Fleet, Process, until
from awa.testing.simulation.recorder import RecordingStore
from awa.testing.simulation.report import SimulationReport
from awa.testing.simulation.scheduling import SCHEDULES, UNIQUE_KIND

__all__ = ["Faults", "Simulation", "SimulationReport"]

_SETTLE_YIELDS = 6
#: how long the calm phase keeps the schedules firing before it pauses them to let the run end
_CALM_FIRING_S = 300.0


#: the first queue's ``key_concurrency_limit`` in a keyed run
_KEY_LIMIT = 2


class Simulation:
    """Run ``jobs`` jobs through ``workers`` real runtimes under ``faults``, then with faults
    off until every job has finished (liveness), checking the lifecycle's laws throughout."""

    def __init__(
        self,
        seed: int,
        *,
        jobs: int = 1000,
        workers: int = 5,
        steps: int | None = None,
        faults: Faults | None = None,
        concurrency: int = 4,
        store_factory: Callable[[ManualClock, random.Random], ClaimStore] | None = None,
        calm_limit_s: float = 6 * 3600.0,
        scheduling: bool = True,
        producers: int = 3,
        unique_rate: float = 0.01,
        keyed_rate: float = 0.3,
    ) -> None:
        self.seed = seed
        self.jobs = jobs
        self.workers = workers
        self.fault_steps = steps if steps is not None else 10 * jobs
        self.faults = faults if faults is not None else Faults()
        self.calm_limit_s = calm_limit_s
        self.rng = random.Random(seed)
        self.clock = ManualClock()
        factory = store_factory or _memory_store
        self.store = RecordingStore(
            factory(self.clock, random.Random(seed ^ 0x5EED)),
            random.Random(seed ^ 0xA11),
            self.clock,
        )
        self.scheduling = scheduling
        self.producers = producers if scheduling else 0
        self.unique_rate = unique_rate
        #: the share of jobs with a concurrency key, and (a third of those) an ordering key;
        #: the first queue limits its keys (``_KEY_LIMIT``)
        self.keyed_rate = keyed_rate
        self.handlers = Handlers(self.rng, self.store, self.faults.hang_rate, lambda: self.calm)
        self.registry = TaskRegistry()
        for queue, kind in KINDS.items():  # a worker refuses a queue that is no task's
            self.registry.add(dict, self.handlers.handle, queue=queue, kind=kind)
        self.registry.add(dict, self.handlers.handle, queue="default", kind=UNIQUE_KIND)
        self.fleet = Fleet(
            self.store,
            self.registry,
            self.clock,
            concurrency=concurrency,
            scheduling=scheduling,
            restart_after_s=self.faults.restart_after_s,
        )
        self.injector = FaultInjector(
            self.faults, self.rng, self.clock, self.store, self.fleet, jobs
        )
        self.steps_taken = 0
        self.calm = False
        self.calm_since: datetime | None = None
        self.schedules_paused_at: datetime | None = None

    # -- choosing the next step --------------------------------------------------------------------
    def _ready(self, now: datetime) -> list[tuple[str, Action]]:
        ready: list[tuple[str, Action]] = []
        for process in self.fleet.alive():
            if until(process.paused_until, now):
                continue
            for name in process.runtime.ready_services(now):
                if name == "heartbeat" and until(process.heartbeats_stalled_until, now):
                    continue
                if name == "complete" and until(process.completions_held_until, now):
                    continue
                ready.append((f"{process.owner} {name}", self._service(process, name, now)))
        for lease in self.handlers.waiting():
            ready.append((f"handler {lease}", self.handlers.finish(lease)))
        for callback_id in self.store.pending_callbacks:
            ready.append((f"external {callback_id[:8]}", self.handlers.answer(callback_id)))
        for index, process in enumerate(self.fleet.processes):
            if process.dead_until is not None and process.dead_until <= now:
                ready.append((f"restart {process.name}", self._restart_action(index)))
        return ready

    def _service(self, process: Process, name: str, now: datetime) -> Action:
        async def run() -> None:
            await process.runtime.run_service(name, now)

        return run

    def _restart_action(self, index: int) -> Action:
        async def run() -> None:
            await self.fleet.restart(index)

        return run

    async def _settle(self) -> None:
        """Let handler tasks run to their next await: asyncio runs ready callbacks in FIFO
        order on this one thread, so this stays deterministic."""
        for _ in range(_SETTLE_YIELDS):
            await asyncio.sleep(0)

    async def _step(self) -> bool:
        """One scheduler step. Returns False when nothing can happen any more."""
        now = self.clock.now()
        if not self.calm:
            await self.injector.strike(now)
            produce(self.store, self.rng, self.producers, self.unique_rate)
            now = self.clock.now()
        elif self.schedules_paused_at is None and self._calm_firing_over(now):
            self._pause_schedules(now)
        if self.steps_taken % 200 == 0:
            self.store.check_unique_holders()
        ready = self._ready(now)
        # a healthy process's timers fire on time: time never passes a due heartbeat, so only
        # the stall fault (and crashes) can starve one
        due_heartbeats = [(label, act) for label, act in ready if label.endswith(" heartbeat")]
        if ready and (self.calm or due_heartbeats or self.rng.random() > 0.1):
            label, action = ready[self.rng.randrange(len(ready))]
            self.store.note(f"step {label}")
            await action()
        else:
            upcoming = self._next_moment()
            if upcoming is None:
                return False
            target = max(upcoming, now + timedelta(milliseconds=1))
            self.clock.set(target if ready == [] else min(target, now + timedelta(seconds=1)))
        await self._settle()
        self.steps_taken += 1
        return True

    def _calm_firing_over(self, now: datetime) -> bool:
        return self.calm_since is not None and (now - self.calm_since).total_seconds() >= (
            _CALM_FIRING_S if self.scheduling else 0
        )

    def _pause_schedules(self, now: datetime) -> None:
        """The calm phase let a leader fire on time for a while; now the run may end."""
        self.schedules_paused_at = now
        for schedule in SCHEDULES if self.scheduling else ():
            self.store.set_schedule_paused(schedule.name, True)
        self.store.note("SCHEDULES PAUSED")

    def _next_moment(self) -> datetime | None:
        alive = self.fleet.alive()
        moments = [p.runtime.next_due() for p in alive]
        moments += [p.paused_until for p in alive if p.paused_until is not None]
        moments += [p.dead_until for p in self.fleet.processes if p.dead_until is not None]
        moments += [self.clock.next_wakeup()]
        return min((m for m in moments if m is not None), default=None)

    # -- running -----------------------------------------------------------------------------------
    async def _run(self) -> SimulationReport:
        started = self.clock.now()
        self.store.lost_wakeup_rate = self.faults.lost_wakeup_rate
        await self.fleet.start(self.workers)
        if self.keyed_rate:
            self.store.configure_queue(QUEUES[0], key_concurrency_limit=_KEY_LIMIT)
            self.store.key_limits[QUEUES[0]] = _KEY_LIMIT
        self._insert_jobs()
        for _ in range(self.fault_steps):
            await self._step()
        await self._calm_down()
        deadline = self.clock.now() + timedelta(seconds=self.calm_limit_s)
        while not self._all_finished() and self.clock.now() < deadline:
            if not await self._step():
                break
        for process in self.fleet.alive():
            await process.runtime.abandon()
        return self._report(started)

    def _insert_jobs(self) -> None:
        now, rng = self.clock.now(), self.rng

        def new_job(n: int) -> NewJob:
            queue = rng.choice(QUEUES)
            keyed = rng.random() < self.keyed_rate
            return NewJob(
                kind=KINDS[queue],
                args={"n": n},
                queue=queue,
                priority=rng.randint(1, 4),
                max_attempts=rng.randint(1, 5),
                run_at=now + timedelta(seconds=rng.choice([0, 0, 0, 10, 60])),
                concurrency_key=f"k{rng.randrange(5)}" if keyed else None,
                ordering_key=f"o{rng.randrange(3)}" if keyed and rng.random() < 0.33 else None,
            )

        batch = [new_job(n) for n in range(self.jobs)]
        for start in range(0, len(batch), 1000):
            self.store.insert(batch[start : start + 1000])

    async def _calm_down(self) -> None:
        """Faults stop: dead processes restart, stalls end, queues resume."""
        self.calm = True
        self.calm_since = self.clock.now()
        self.store.lost_wakeup_rate = 0.0
        self.store.note("CALM")
        for index, process in enumerate(self.fleet.processes):
            if process.dead_until is not None:
                await self.fleet.restart(index)
            else:
                process.heartbeats_stalled_until = process.completions_held_until = None
                process.paused_until = None
        for queue in QUEUES:
            self.store.resume_queue(queue)
        self.handlers.release_hung()

    def _all_finished(self) -> bool:
        if self.schedules_paused_at is None:
            return False  # the schedules still fire
        stats = self.store.queue_stats()
        unfinished = sum(
            count for s in stats for state, count in s.counts.items() if not state.is_terminal
        )
        return unfinished == 0 and not any(p.runtime.has_finishes() for p in self.fleet.alive())

    def _report(self, started: datetime) -> SimulationReport:
        calm = (self.calm_since, self.schedules_paused_at) if self.scheduling else None
        final, dlq = check_final_state(self.store, calm)
        digest = hashlib.sha256("\n".join(self.store.history).encode()).hexdigest()[:16]
        return SimulationReport(
            seed=self.seed,
            jobs=self.jobs,
            steps=self.steps_taken,
            simulated_s=(self.clock.now() - started).total_seconds(),
            final_states=dict(final),
            dlq_reasons=dict(dlq),
            counters=dict(self.store.counters),
            violations=tuple(self.store.violations),
            digest=digest,
            history=tuple(self.store.history),
            jobs_total=len(self.store.models),
        )

    def run(self) -> SimulationReport:
        # the runtime's expected warnings and the worker log's line per attempt would drown
        # the report
        loggers = [logging.getLogger(name) for name in ("awa.runtime", "awa.worker")]
        were = [logger.disabled for logger in loggers]
        for logger in loggers:
            logger.disabled = True
        try:
            return asyncio.run(self._run())
        finally:
            for logger, was in zip(loggers, were, strict=True):
                logger.disabled = was


def _memory_store(clock: ManualClock, rng: random.Random) -> ClaimStore:
    return MemoryStore(clock, rng=rng)
