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
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import attrs

import awa
from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import (
    Cancel,
    CompleteCallback,
    FailCallback,
    JobState,
    Lease,
    NewJob,
    ResumeCallback,
    RetryAfter,
    RetryCallback,
    Snooze,
    TerminalError,
    UniqueConflict,
    WaitForCallback,
)
from awa.ports import ClaimStore
from awa.runtime.config import QueueConfig, RuntimeConfig
from awa.runtime.periodic import PeriodicService
from awa.runtime.registry import TaskRegistry
from awa.runtime.runtime import Runtime
from awa.testing.laws import field_disagreements
from awa.testing.simulation.recorder import RecordingStore, expected_dlq_reason
from awa.testing.simulation.scheduling import (
    SCHEDULES,
    UNIQUE_KIND,
    fire_gaps,
    fire_of,
    unique_job,
    unique_violations,
)

__all__ = ["Faults", "Simulation", "SimulationReport"]

QUEUES = ("default", "bulk")
DLQ_QUEUES = frozenset({"default"})
#: the kind of the simulated jobs on each queue (one task per queue)
KINDS = {"default": "sim", "bulk": "sim_bulk"}
_TEN_YEARS_S = 10 * 365 * 24 * 3600.0
_SETTLE_YIELDS = 6
#: how long the calm phase keeps the schedules firing before it pauses them to let the run end
_CALM_FIRING_S = 300.0
#: from the calm's start, time enough for a leader to be elected (leadership ttl + a round)
_LEADER_ELECTED_S = 30.0


@attrs.frozen(kw_only=True)
class Faults:
    """Fault rates: the chance per step (per started attempt for ``hang_rate``)."""

    crash_rate: float = 0.002
    shutdown_rate: float = 0.001  # a graceful stop (a deploy): running attempts are released
    restart_after_s: float = 30.0
    stall_rate: float = 0.002
    stall_s: float = 60.0
    hang_rate: float = 0.01
    late_finish_rate: float = 0.002
    late_finish_s: float = 60.0
    lost_wakeup_rate: float = 0.2
    clock_jump_rate: float = 0.001
    clock_jump_s: float = 600.0
    operator_rate: float = 0.002
    pause_rate: float = 0.001  # a process stops running (SIGSTOP, a long GC), then goes on
    pause_s: float = 60.0
    #: the pause that matters most to periodic jobs: a leader that planned fires and stops
    #: before firing them (per step in which some leader holds a plan)
    planning_pause_rate: float = 0.05

    @classmethod
    def none(cls) -> Faults:
        return cls(
            crash_rate=0,
            shutdown_rate=0,
            stall_rate=0,
            hang_rate=0,
            late_finish_rate=0,
            lost_wakeup_rate=0,
            clock_jump_rate=0,
            operator_rate=0,
            pause_rate=0,
            planning_pause_rate=0,
        )


@attrs.frozen
class SimulationReport:
    seed: int
    jobs: int
    steps: int
    simulated_s: float
    final_states: dict[str, int]
    dlq_reasons: dict[str, int]
    counters: dict[str, int]
    violations: tuple[str, ...]
    digest: str
    history: tuple[str, ...] = attrs.field(repr=False)
    #: every job the run created: the seeded ones, periodic fires and unique inserts
    jobs_total: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations

    def replay_command(self, **options: Any) -> str:
        flags = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in options.items())
        return f"awa simulate --seed {self.seed} --jobs {self.jobs} {flags}".strip()

    def summary(self) -> str:
        lines = [
            f"seed {self.seed}: {self.jobs} jobs (and {self.jobs_total - self.jobs} scheduled"
            f" ones), {self.steps} steps,"
            f" {self.simulated_s:,.0f} s simulated",
            "jobs by final state: "
            + ", ".join(f"{k} {v}" for k, v in sorted(self.final_states.items())),
            "dead-lettered by reason: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.dlq_reasons.items())) or "none"),
            "rescues by cause: "
            + (
                ", ".join(
                    f"{k.removeprefix('rescued_')} {v}"
                    for k, v in sorted(self.counters.items())
                    if k.startswith("rescued_")
                )
                or "none"
            ),
            f"stale finishes rejected: {self.counters.get('stale_finish_rejected', 0)},"
            f" stale heartbeats rejected: {self.counters.get('stale_heartbeat_rejected', 0)}",
            "faults: "
            + ", ".join(
                f"{k} {self.counters.get(k, 0)}"
                for k in (
                    "crashes",
                    "shutdowns",
                    "stalls",
                    "hangs",
                    "late_finishes",
                    "wakeups_lost",
                    "clock_jumps",
                    "operator_actions",
                    "pauses",
                )
            ),
            f"periodic jobs enqueued: {self.counters.get('fires', 0)}, stale fires refused:"
            f" {self.counters.get('stale_fires_refused', 0)}; unique inserts:"
            f" {self.counters.get('unique_inserted', 0)}, refused"
            f" {self.counters.get('unique_refused', 0)}, skipped"
            f" {self.counters.get('unique_skipped', 0)}",
            f"digest {self.digest}",
            f"invariant violations: {len(self.violations)}",
        ]
        lines += [f"  {v}" for v in self.violations[:20]]
        return "\n".join(lines)


@attrs.define
class _Process:
    """One worker process. A crash kills it; it restarts later as a new incarnation."""

    name: str
    incarnation: int
    runtime: Runtime
    dead_until: datetime | None = None
    paused_until: datetime | None = None
    heartbeats_stalled_until: datetime | None = None
    completions_held_until: datetime | None = None

    @property
    def owner(self) -> str:
        return f"{self.name}#{self.incarnation}"


Action = Callable[[], Awaitable[None]]


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
    ) -> None:
        self.seed = seed
        self.jobs = jobs
        self.workers = workers
        self.fault_steps = steps if steps is not None else 10 * jobs
        self.faults = faults if faults is not None else Faults()
        self.concurrency = concurrency
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
        self.registry = TaskRegistry()
        for queue, kind in KINDS.items():  # a worker refuses a queue that is no task's
            self.registry.add(dict, self._handle, queue=queue, kind=kind)
        self.registry.add(dict, self._handle, queue="default", kind=UNIQUE_KIND)
        self.processes: list[_Process] = []
        self.gates: dict[Lease, asyncio.Future[str]] = {}
        self.hung: set[Lease] = set()
        self.returned_waits: set[str] = set()
        self.steps_taken = 0
        self.calm = False
        self.calm_since: datetime | None = None
        self.schedules_paused_at: datetime | None = None

    # -- the handler every process runs ----------------------------------------------------------
    async def _handle(self, job: awa.Job[dict[str, Any]]) -> object:
        # what a real handler reports as it goes, carried by heartbeats and the outcome
        job.set_progress(50, "halfway")
        job.update_metadata({"last_attempt": job.attempt})
        gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.gates[job.lease] = gate
        if not self.calm and self.rng.random() < self.faults.hang_rate:
            self.hung.add(job.lease)
            self.store.counters["hangs"] += 1
        try:
            action = await gate
        finally:
            self.gates.pop(job.lease, None)
            self.hung.discard(job.lease)
        return await self._act(job, action)

    async def _act(self, job: awa.Job[dict[str, Any]], action: str) -> object:
        if action == "complete":
            return None
        if action == "retry_after":
            return RetryAfter(self.rng.choice([1, 10, 60]))
        if action == "snooze":
            return Snooze(self.rng.choice([5, 30]))
        if action == "cancel":
            return Cancel("simulated handler cancel")
        if action == "error":
            raise RuntimeError(f"simulated failure on attempt {job.attempt}")
        if action == "terminal":
            raise TerminalError("simulated bad input")
        if action == "panic":
            raise SystemExit("simulated panic")
        token = await job.register_callback(timeout=self.rng.choice([30, 120]))
        if action == "park":
            # nobody stays to observe a resume, so the external side completes, fails or
            # retries a returned wait; resume is for handlers that await wait_for_callback
            self.returned_waits.add(token.callback_id)
            return WaitForCallback(token)
        await job.wait_for_callback(token)
        return None

    _OUTCOMES = (
        ("complete", 50),
        ("retry_after", 7),
        ("snooze", 7),
        ("error", 10),
        ("terminal", 3),
        ("panic", 2),
        ("cancel", 3),
        ("park", 9),
        ("await_callback", 9),
    )

    # -- processes ---------------------------------------------------------------------------------
    def _runtime(self, owner: str) -> Runtime:
        queues = [
            QueueConfig(
                queue=q,
                concurrency=self.concurrency,
                deadline_duration_s=60,
                dlq_enabled=q in DLQ_QUEUES,
                heartbeat_interval_s=5,
                heartbeat_staleness_s=20,
                poll_interval_s=1,
            )
            for q in QUEUES
        ]
        config = RuntimeConfig(
            maintenance_interval_s=5,
            finished_retention_s=_TEN_YEARS_S,
            failed_retention_s=_TEN_YEARS_S,
            dlq_retention_s=_TEN_YEARS_S,
            claim_batch_max=50,
        )
        return Runtime(
            self.store,
            self.registry,
            queues,
            clock=self.clock,
            config=config,
            owner=owner,
            inline_store_calls=True,
            schedules=SCHEDULES if self.scheduling else (),
        )

    async def _spawn(self, name: str, incarnation: int) -> _Process:
        process = _Process(name, incarnation, self._runtime(f"{name}#{incarnation}"))
        await process.runtime.attach()
        return process

    async def _crash(self, process: _Process) -> None:
        self.store.counters["crashes"] += 1
        self.store.note(f"CRASH {process.owner} holding {len(list(process.runtime.attempts()))}")
        await process.runtime.abandon()
        process.dead_until = self.clock.now() + timedelta(seconds=self.faults.restart_after_s)

    async def _shut_down(self, process: _Process) -> None:
        """A deploy: the process stops gracefully at once (a shutdown timeout of 0), so every
        handler still running is released (row 22) and retried elsewhere without backoff."""
        self.store.counters["shutdowns"] += 1
        self.store.note(
            f"SHUTDOWN {process.owner} releasing {len(list(process.runtime.attempts()))}"
        )
        await process.runtime.shutdown(timeout=0)
        process.dead_until = self.clock.now() + timedelta(seconds=self.faults.restart_after_s)

    async def _restart(self, index: int) -> None:
        old = self.processes[index]
        self.processes[index] = await self._spawn(old.name, old.incarnation + 1)
        self.store.note(f"RESTART {self.processes[index].owner}")

    # -- choosing the next step --------------------------------------------------------------------
    def _alive(self) -> list[_Process]:
        return [p for p in self.processes if p.dead_until is None]

    def _ready(self, now: datetime) -> list[tuple[str, Action]]:
        ready: list[tuple[str, Action]] = []
        for process in self._alive():
            if _until(process.paused_until, now):
                continue
            for name in process.runtime.ready_services(now):
                if name == "heartbeat" and _until(process.heartbeats_stalled_until, now):
                    continue
                if name == "complete" and _until(process.completions_held_until, now):
                    continue
                ready.append((f"{process.owner} {name}", self._service(process, name, now)))
        for lease in sorted(self.gates, key=lambda lease: (lease.job_id, lease.run_lease)):
            if lease not in self.hung and not self.gates[lease].done():
                ready.append((f"handler {lease}", self._finish_handler(lease)))
        for callback_id in self.store.pending_callbacks:
            ready.append((f"external {callback_id[:8]}", self._answer(callback_id)))
        for index, process in enumerate(self.processes):
            if process.dead_until is not None and process.dead_until <= now:
                ready.append((f"restart {process.name}", self._restart_action(index)))
        return ready

    def _service(self, process: _Process, name: str, now: datetime) -> Action:
        async def run() -> None:
            await process.runtime.run_service(name, now)

        return run

    def _finish_handler(self, lease: Lease) -> Action:
        async def run() -> None:
            if self.calm:
                action = "complete"
            else:
                names, weights = zip(*self._OUTCOMES, strict=True)
                action = self.rng.choices(names, weights)[0]
            self.store.note(f"handler {lease} -> {action}")
            self.gates[lease].set_result(action)

        return run

    def _answer(self, callback_id: str) -> Action:
        async def run() -> None:
            self.store.pending_callbacks.remove(callback_id)
            roll = self.rng.random()
            resolution: Any
            if self.calm or roll < 0.4:
                resolution = CompleteCallback({"answered": True})
            elif roll < 0.7:
                resolution = (
                    CompleteCallback({"answered": True})
                    if callback_id in self.returned_waits
                    else ResumeCallback({"resumed": True})
                )
            elif roll < 0.8:
                resolution = FailCallback("simulated external failure")
            elif roll < 0.9:
                resolution = RetryCallback()
            else:
                try:
                    self.store.heartbeat_callback(callback_id, timeout_s=60)
                    self.store.pending_callbacks.append(callback_id)
                except awa.CallbackNotFound:
                    self.store.counters["callback_not_found"] += 1
                return
            with contextlib.suppress(awa.CallbackNotFound):  # counted by the recorder
                self.store.resolve_callback(callback_id, resolution)

        return run

    def _restart_action(self, index: int) -> Action:
        async def run() -> None:
            await self._restart(index)

        return run

    async def _maybe_fault(self, now: datetime) -> None:
        f, rng, alive = self.faults, self.rng, self._alive()
        if alive and rng.random() < f.crash_rate:
            await self._crash(rng.choice(alive))
        living = self._alive()  # not the one that just crashed
        if living and rng.random() < f.shutdown_rate:
            await self._shut_down(rng.choice(living))
        if alive and rng.random() < f.stall_rate:
            process = rng.choice(alive)
            process.heartbeats_stalled_until = now + timedelta(seconds=f.stall_s)
            self.store.counters["stalls"] += 1
            self.store.note(f"STALL heartbeats of {process.owner}")
        if alive and rng.random() < f.late_finish_rate:
            process = rng.choice(alive)
            process.completions_held_until = now + timedelta(seconds=f.late_finish_s)
            self.store.counters["late_finishes"] += 1
            self.store.note(f"HOLD completions of {process.owner}")
        if rng.random() < f.clock_jump_rate:
            jump = rng.uniform(0, f.clock_jump_s)
            self.clock.advance(jump)
            self.store.counters["clock_jumps"] += 1
            self.store.note(f"CLOCK JUMP {jump:.1f}s")
        if rng.random() < f.operator_rate:
            await self._operator()
        planning = [p for p in alive if _has_plan(p) and not _until(p.paused_until, now)]
        if planning and rng.random() < f.planning_pause_rate:
            self._pause(rng.choice(planning), now)
        if alive and rng.random() < f.pause_rate:
            self._pause(rng.choice(alive), now)

    def _pause(self, process: _Process, now: datetime) -> None:
        pause_s = self.faults.pause_s
        process.paused_until = now + timedelta(seconds=pause_s)
        self.store.counters["pauses"] += 1
        held = "holding a fire plan " if _has_plan(process) else ""
        self.store.note(f"PAUSE {process.owner} {held}for {pause_s:g}s")

    def _produce(self) -> None:
        """Each producer inserts a unique job now and then, raising or skipping on a held key."""
        for number in range(self.producers):
            if self.rng.random() >= self.unique_rate:
                continue
            queue = self.rng.choice(QUEUES)  # failures stay among the jobs on "bulk" (no DLQ)
            job = unique_job(self.rng.randrange(100), self.rng.randrange(2), queue)
            on_conflict = self.rng.choice(["raise", "skip"])
            self.store.note(f"producer p{number} inserts key {job.args['key']} ({on_conflict})")
            with contextlib.suppress(UniqueConflict):  # checked and counted by the recorder
                self.store.insert([job], on_conflict=on_conflict)  # type: ignore[arg-type]

    async def _operator(self) -> None:
        self.store.counters["operator_actions"] += 1
        roll, queue = self.rng.random(), self.rng.choice(QUEUES)
        if roll < 0.4:
            # operators cancel what is stuck or in flight more often than what is queued
            busy = sorted(
                {a.lease.job_id for p in self._alive() for a in p.runtime.attempts()}
                | {lease.job_id for p in self._alive() for lease in p.runtime.pending_finishes()}
            )
            job_id = self.rng.choice(busy) if busy else self.rng.randint(1, self.jobs)
            try:
                self.store.cancel(job_id)
            except (awa.IllegalTransition, awa.JobNotFound):
                self.store.note(f"operator cancel {job_id} refused")
        elif roll < 0.6:
            self.store.pause_queue(queue)
        elif roll < 0.8:
            self.store.resume_queue(queue)
        else:
            self.store.bulk_retry_from_dlq(queue=queue)

    async def _settle(self) -> None:
        """Let handler tasks run to their next await: asyncio runs ready callbacks in FIFO
        order on this one thread, so this stays deterministic."""
        for _ in range(_SETTLE_YIELDS):
            await asyncio.sleep(0)

    async def _step(self) -> bool:
        """One scheduler step. Returns False when nothing can happen any more."""
        now = self.clock.now()
        if not self.calm:
            await self._maybe_fault(now)
            self._produce()
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
        moments = [p.runtime.next_due() for p in self._alive()]
        moments += [p.paused_until for p in self._alive() if p.paused_until is not None]
        moments += [p.dead_until for p in self.processes if p.dead_until is not None]
        moments += [self.clock.next_wakeup()]
        return min((m for m in moments if m is not None), default=None)

    # -- running -----------------------------------------------------------------------------------
    async def _run(self) -> SimulationReport:
        started = self.clock.now()
        self.store.lost_wakeup_rate = self.faults.lost_wakeup_rate
        self.processes = [await self._spawn(f"w{n + 1}", 0) for n in range(self.workers)]
        self._insert_jobs()
        for _ in range(self.fault_steps):
            await self._step()
        await self._calm_down()
        deadline = self.clock.now() + timedelta(seconds=self.calm_limit_s)
        while not self._all_finished() and self.clock.now() < deadline:
            if not await self._step():
                break
        for process in self._alive():
            await process.runtime.abandon()
        return self._report(started)

    def _insert_jobs(self) -> None:
        now, rng = self.clock.now(), self.rng

        def new_job(n: int) -> NewJob:
            queue = rng.choice(QUEUES)
            return NewJob(
                kind=KINDS[queue],
                args={"n": n},
                queue=queue,
                priority=rng.randint(1, 4),
                max_attempts=rng.randint(1, 5),
                run_at=now + timedelta(seconds=rng.choice([0, 0, 0, 10, 60])),
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
        for index, process in enumerate(self.processes):
            if process.dead_until is not None:
                await self._restart(index)
            else:
                process.heartbeats_stalled_until = process.completions_held_until = None
                process.paused_until = None
        for queue in QUEUES:
            self.store.resume_queue(queue)
        for lease, gate in self.gates.items():
            if lease in self.hung and not gate.done():
                gate.set_result("complete")  # a hung handler finally returns
        self.hung.clear()

    def _all_finished(self) -> bool:
        if self.schedules_paused_at is None:
            return False  # the schedules still fire
        stats = self.store.queue_stats()
        unfinished = sum(
            count for s in stats for state, count in s.counts.items() if not state.is_terminal
        )
        return unfinished == 0 and not any(p.runtime.has_finishes() for p in self._alive())

    def _report(self, started: datetime) -> SimulationReport:
        final: Counter[str] = Counter()
        dlq: Counter[str] = Counter()
        all_jobs, all_entries = _everything(self.store.store)
        jobs = {j.id: j for j in all_jobs}
        entries = {e.job.id: e for e in all_entries}
        for job_id in jobs.keys() & entries.keys():
            self.store.violation(f"job {job_id} is in two homes")
        missing = set(self.store.models) - jobs.keys() - entries.keys()
        for job_id in sorted(missing):
            self.store.violation(f"job {job_id} was lost")
        for job in (*jobs.values(), *(entry.job for entry in entries.values())):
            for problem in field_disagreements(job):
                self.store.violation(problem)
        for job in jobs.values():
            final[job.state.value] += 1
            if not job.state.is_terminal:
                self.store.violation(f"job {job.id} never finished: {job.state.value} (liveness)")
            if job.state is JobState.FAILED and job.queue in DLQ_QUEUES:
                self.store.violation(f"failed job {job.id} on a DLQ queue is not in the DLQ")
        self._check_scheduling([*jobs.values(), *(e.job for e in entries.values())], jobs)
        for entry in entries.values():
            final["dead_lettered"] += 1
            dlq[entry.reason] += 1
            if entry.reason != expected_dlq_reason(entry.job.errors[-1]):
                self.store.violation(
                    f"job {entry.job.id} dead-lettered as {entry.reason} after"
                    f" {entry.job.errors[-1].error!r}"
                )
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

    def _check_scheduling(self, everything: list[Any], jobs: dict[int, Any]) -> None:
        """The scheduling laws on the final state (``scheduling.py``)."""
        if not self.scheduling:
            return
        fired, twice = _fires_of(everything)
        for found in twice + unique_violations(list(jobs.values())):
            self.store.violation(found)
        if self.calm_since is None or self.schedules_paused_at is None:
            self.store.violation("the calm phase never let the schedules fire")
            return
        calm_from = self.calm_since + timedelta(seconds=_LEADER_ELECTED_S)
        calm_until = self.schedules_paused_at - timedelta(seconds=1)
        for gap in fire_gaps(fired, calm_from, calm_until):
            self.store.violation(gap)

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


def _fires_of(jobs: list[Any]) -> tuple[dict[str, list[datetime]], list[str]]:
    """Every job's fire, by schedule, and the fires enqueued more than once."""
    fired: dict[str, list[datetime]] = {}
    for job in jobs:
        fire = fire_of(job)
        if fire is not None:
            fired.setdefault(fire[0], []).append(fire[1])
    twice = [
        f"{name} enqueued its fire at {moment.isoformat()} twice"
        for name, moments in fired.items()
        for moment in sorted({m for m in moments if moments.count(m) > 1})
    ]
    return fired, twice


def _has_plan(process: _Process) -> bool:
    service = process.runtime.service("periodic")
    return isinstance(service, PeriodicService) and bool(service.planned)


def _until(moment: datetime | None, now: datetime) -> bool:
    return moment is not None and now < moment


def _memory_store(clock: ManualClock, rng: random.Random) -> ClaimStore:
    return MemoryStore(clock, rng=rng)


def _everything(store: Any) -> tuple[list[Any], list[Any]]:
    """Every job and dead-letter entry: unbounded on the memory store; through the bounded
    listings elsewhere (simulations of other stores stay well under their 5,000 bound)."""
    if isinstance(store, MemoryStore):
        return store.snapshot()
    return store.list_jobs(limit=5000), store.list_dlq(limit=5000)
