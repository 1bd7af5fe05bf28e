"""The simulated world's worker processes: each a real ``Runtime`` on the shared store and
clock, serving the world's two queues; a crash or a deploy stops one, which later restarts as
a new incarnation (a new owner)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

import attrs

from awa.adapters.memory import ManualClock
from awa.runtime.config import QueueConfig, RuntimeConfig
from awa.runtime.periodic import PeriodicService
from awa.runtime.registry import TaskRegistry
from awa.runtime.runtime import Runtime
from awa.testing.simulation.recorder import RecordingStore
from awa.testing.simulation.scheduling import SCHEDULES

__all__ = ["DLQ_QUEUES", "KINDS", "QUEUES", "Action", "Fleet", "Process", "has_plan", "until"]

QUEUES = ("default", "bulk")
DLQ_QUEUES = frozenset({"default"})
#: the kind of the simulated jobs on each queue (one task per queue)
KINDS = {"default": "sim", "bulk": "sim_bulk"}
_TEN_YEARS_S = 10 * 365 * 24 * 3600.0

#: one step the world's scheduler may take
Action = Callable[[], Awaitable[None]]


@attrs.define
class Process:
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


@attrs.define
class Fleet:
    """The worker processes, in a fixed order: started, crashed, shut down and restarted."""

    store: RecordingStore
    registry: TaskRegistry
    clock: ManualClock
    concurrency: int
    scheduling: bool
    restart_after_s: float
    processes: list[Process] = attrs.field(factory=list, init=False)

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

    async def start(self, workers: int) -> None:
        self.processes = [await self._spawn(f"w{n + 1}", 0) for n in range(workers)]

    async def _spawn(self, name: str, incarnation: int) -> Process:
        process = Process(name, incarnation, self._runtime(f"{name}#{incarnation}"))
        await process.runtime.attach()
        return process

    def alive(self) -> list[Process]:
        return [p for p in self.processes if p.dead_until is None]

    async def crash(self, process: Process) -> None:
        self.store.counters["crashes"] += 1
        self.store.note(f"CRASH {process.owner} holding {len(list(process.runtime.attempts()))}")
        await process.runtime.abandon()
        process.dead_until = self.clock.now() + timedelta(seconds=self.restart_after_s)

    async def shut_down(self, process: Process) -> None:
        """A deploy: the process stops gracefully at once (a shutdown timeout of 0), so every
        handler still running is released (row 22) and retried elsewhere without backoff."""
        self.store.counters["shutdowns"] += 1
        self.store.note(
            f"SHUTDOWN {process.owner} releasing {len(list(process.runtime.attempts()))}"
        )
        await process.runtime.shutdown(timeout=0)
        process.dead_until = self.clock.now() + timedelta(seconds=self.restart_after_s)

    async def restart(self, index: int) -> None:
        old = self.processes[index]
        self.processes[index] = await self._spawn(old.name, old.incarnation + 1)
        self.store.note(f"RESTART {self.processes[index].owner}")


def has_plan(process: Process) -> bool:
    """Whether the process's periodic service holds fires it planned and has not fired."""
    service = process.runtime.service("periodic")
    return isinstance(service, PeriodicService) and bool(service.planned)


def until(moment: datetime | None, now: datetime) -> bool:
    """Whether ``now`` is still before ``moment`` (a pause, stall or hold that may be over)."""
    return moment is not None and now < moment
