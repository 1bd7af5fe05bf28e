"""The faults a simulated world suffers, and the striking of them.

Each step (before the calm phase) ``FaultInjector.strike`` rolls once per fault: a process
crashes or is shut down (``Fleet``), its heartbeats stall or its completions are held, the
clock jumps, an operator acts, or a process pauses; a leader that holds a fire plan pauses far
more often, since that pause matters most to periodic jobs.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import attrs

from awa.adapters.memory import ManualClock
from awa.domain import IllegalTransition, JobNotFound
from awa.testing.simulation.processes import QUEUES, Fleet, Process, has_plan, until
from awa.testing.simulation.recorder import RecordingStore

__all__ = ["FaultInjector", "Faults"]


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


@attrs.define
class FaultInjector:
    """Strikes ``faults`` at random (from the world's one ``rng``) on the fleet and the store;
    ``jobs`` is how many were seeded, from which an operator picks when nothing is busy."""

    faults: Faults
    rng: random.Random
    clock: ManualClock
    store: RecordingStore
    fleet: Fleet
    jobs: int

    async def strike(self, now: datetime) -> None:
        """Roll each fault once, in a fixed order, so one seed strikes the same faults."""
        f, rng, alive = self.faults, self.rng, self.fleet.alive()
        if alive and rng.random() < f.crash_rate:
            await self.fleet.crash(rng.choice(alive))
        living = self.fleet.alive()  # not the one that just crashed
        if living and rng.random() < f.shutdown_rate:
            await self.fleet.shut_down(rng.choice(living))
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
        planning = [p for p in alive if has_plan(p) and not until(p.paused_until, now)]
        if planning and rng.random() < f.planning_pause_rate:
            self._pause(rng.choice(planning), now)
        if alive and rng.random() < f.pause_rate:
            self._pause(rng.choice(alive), now)

    def _pause(self, process: Process, now: datetime) -> None:
        pause_s = self.faults.pause_s
        process.paused_until = now + timedelta(seconds=pause_s)
        self.store.counters["pauses"] += 1
        held = "holding a fire plan " if has_plan(process) else ""
        self.store.note(f"PAUSE {process.owner} {held}for {pause_s:g}s")

    async def _operator(self) -> None:
        self.store.counters["operator_actions"] += 1
        roll, queue = self.rng.random(), self.rng.choice(QUEUES)
        if roll < 0.4:
            # operators cancel what is stuck or in flight more often than what is queued
            alive = self.fleet.alive()
            busy = sorted(
                {a.lease.job_id for p in alive for a in p.runtime.attempts()}
                | {lease.job_id for p in alive for lease in p.runtime.pending_finishes()}
            )
            job_id = self.rng.choice(busy) if busy else self.rng.randint(1, self.jobs)
            try:
                self.store.cancel(job_id)
            except (IllegalTransition, JobNotFound):
                self.store.note(f"operator cancel {job_id} refused")
        elif roll < 0.6:
            self.store.pause_queue(queue)
        elif roll < 0.8:
            self.store.resume_queue(queue)
        else:
            self.store.bulk_retry_from_dlq(queue=queue)
