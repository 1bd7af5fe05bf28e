"""Who acts on the jobs besides the runtimes: the handler every process runs, the external
system that answers its callbacks, and the producers that insert unique jobs.

Every choice is drawn from the world's one ``rng``, in the order the scheduler's steps come,
so one seed gives the same history. In the calm phase handlers complete, callbacks are
completed and nothing hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable
from typing import Any

import awa
from awa.domain import (
    CallbackNotFound,
    Cancel,
    CompleteCallback,
    FailCallback,
    Lease,
    ResumeCallback,
    RetryAfter,
    RetryCallback,
    Snooze,
    TerminalError,
    UniqueConflict,
    WaitForCallback,
)
from awa.testing.simulation.processes import QUEUES, Action
from awa.testing.simulation.recorder import RecordingStore
from awa.testing.simulation.scheduling import unique_job

__all__ = ["Handlers", "produce"]


class Handlers:
    """The handler of every simulated task: each attempt waits at a gate until the scheduler
    lets it return (``finish``), unless it hangs until the calm phase."""

    def __init__(
        self,
        rng: random.Random,
        store: RecordingStore,
        hang_rate: float,
        is_calm: Callable[[], bool],
    ) -> None:
        self.rng = rng
        self.store = store
        self.hang_rate = hang_rate
        self.is_calm = is_calm  # the world's phase: once calm, nothing hangs or fails
        self.gates: dict[Lease, asyncio.Future[str]] = {}
        self.hung: set[Lease] = set()
        self.returned_waits: set[str] = set()

    async def handle(self, job: awa.Job[dict[str, Any]]) -> object:
        # what a real handler reports as it goes, carried by heartbeats and the outcome
        job.set_progress(50, "halfway")
        job.update_metadata({"last_attempt": job.attempt})
        gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.gates[job.lease] = gate
        if not self.is_calm() and self.rng.random() < self.hang_rate:
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

    #: how often a handler returns each outcome (outside the calm phase), by weight
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

    def finish(self, lease: Lease) -> Action:
        """The step that lets the handler holding ``lease`` return with a drawn outcome."""

        async def run() -> None:
            if self.is_calm():
                action = "complete"
            else:
                names, weights = zip(*self._OUTCOMES, strict=True)
                action = self.rng.choices(names, weights)[0]
            self.store.note(f"handler {lease} -> {action}")
            self.gates[lease].set_result(action)

        return run

    def answer(self, callback_id: str) -> Action:
        """The step in which the external system answers (or extends) ``callback_id``."""

        async def run() -> None:
            self.store.pending_callbacks.remove(callback_id)
            roll = self.rng.random()
            resolution: Any
            if self.is_calm() or roll < 0.4:
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
                except CallbackNotFound:
                    self.store.counters["callback_not_found"] += 1
                return
            with contextlib.suppress(CallbackNotFound):  # counted by the recorder
                self.store.resolve_callback(callback_id, resolution)

        return run

    def waiting(self) -> list[Lease]:
        """The attempts the scheduler may let return: neither hung nor already let go."""
        return [
            lease
            for lease in sorted(self.gates, key=lambda lease: (lease.job_id, lease.run_lease))
            if lease not in self.hung and not self.gates[lease].done()
        ]

    def release_hung(self) -> None:
        """In the calm phase a hung handler finally returns."""
        for lease, gate in self.gates.items():
            if lease in self.hung and not gate.done():
                gate.set_result("complete")
        self.hung.clear()


def produce(store: RecordingStore, rng: random.Random, producers: int, unique_rate: float) -> None:
    """Each producer inserts a unique job now and then, raising or skipping on a held key."""
    for number in range(producers):
        if rng.random() >= unique_rate:
            continue
        queue = rng.choice(QUEUES)  # failures stay among the jobs on "bulk" (no DLQ)
        job = unique_job(rng.randrange(100), rng.randrange(2), queue)
        on_conflict = rng.choice(["raise", "skip"])
        store.note(f"producer p{number} inserts key {job.args['key']} ({on_conflict})")
        with contextlib.suppress(UniqueConflict):  # checked and counted by the recorder
            store.insert([job], on_conflict=on_conflict)  # type: ignore[arg-type]
