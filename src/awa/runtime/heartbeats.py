"""Proof of life for the attempts this process runs, and a watch on the event loop.

``HeartbeatService`` writes one batched heartbeat for every live attempt. Under the runtime's
scheduler it runs on the event loop like every other service (a simulation then picks when it
runs). In production it runs on a thread of its own (``OffLoopHeartbeats``), so an async
handler that blocks the loop (``time.sleep`` in a coroutine, a CPU-bound parse) cannot make
every other attempt in the process look dead: the deadline, not the heartbeat, bounds a handler
that hangs.

``LoopWatch`` notices when the loop stops turning and says once, at WARNING, which job's
handler was running on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime

from awa.domain import AwaError, JobState
from awa.ports import Applied, Clock, Heartbeat, Stale, StaleReason, WorkerStore, WriteResult
from awa.runtime.attempt_table import AttemptTable
from awa.runtime.attempts import Attempt
from awa.runtime.store_calls import StoreCalls

__all__ = ["HeartbeatService", "LoopWatch", "OffLoopHeartbeats"]

log = logging.getLogger("awa.runtime")


class HeartbeatService:
    """One batched heartbeat for every attempt this process runs, with buffered progress."""

    name = "heartbeat"

    def __init__(
        self, table: AttemptTable, store: WorkerStore, store_call: StoreCalls, *, interval_s: float
    ) -> None:
        self.table = table
        self.store = store
        self._call = store_call
        self.interval_s = interval_s

    def collect(self) -> tuple[list[Attempt], list[Heartbeat]]:
        """The live attempts and their beats, taking their buffered progress and metadata
        (safe from any thread)."""
        attempts = [a for a in self.table.attempts() if not a.ended and not a.dropped]
        beats = []
        for attempt in attempts:
            progress, metadata = attempt.take_buffers()
            beats.append(Heartbeat(attempt.lease, progress, metadata))
        return attempts, beats

    @staticmethod
    def restore(attempts: Sequence[Attempt], beats: Sequence[Heartbeat]) -> None:
        """A failed write loses nothing: the buffers go back for the next beat."""
        for attempt, beat in zip(attempts, beats, strict=True):
            attempt.restore_buffers(
                dict(beat.progress) if beat.progress else None,
                dict(beat.metadata) if beat.metadata else None,
            )

    @staticmethod
    def apply(attempts: Sequence[Attempt], results: Sequence[WriteResult]) -> None:
        """Act on what the store said (on the loop: it cancels handler tasks)."""
        for attempt, result in zip(attempts, results, strict=True):
            if isinstance(result, Stale):
                # cancelled by an operator, or rescued while we were slow: stop the handler
                attempt.end(cancelled=result.reason is StaleReason.CANCELLED)
            elif (
                isinstance(result, Applied)
                and attempt.waiting_callback
                and result.job.state is JobState.RUNNING
                and result.job.callback_id is None
            ):
                attempt.signal_callback()  # resumed: polling fallback for a lost hint

    async def run_once(self, now: datetime) -> float | None:
        attempts, beats = self.collect()
        if not beats:
            return self.interval_s
        try:
            results = await self._call(self.store.heartbeat, beats)
        except AwaError:
            self.restore(attempts, beats)
            raise
        self.apply(attempts, results)
        return self.interval_s


class OffLoopHeartbeats:
    """Drives a ``HeartbeatService`` from a daemon thread every ``interval_s`` of real time;
    results are handed back to the loop."""

    def __init__(
        self, service: HeartbeatService, loop: asyncio.AbstractEventLoop, clock: Clock
    ) -> None:
        self.service = service
        self.loop = loop
        self.clock = clock
        self.succeeded_at: datetime | None = None  # the last round that wrote (or had none)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="awa-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        service = self.service
        while not self._stop.wait(service.interval_s):
            started_at = self.clock.now()
            attempts, beats = service.collect()
            if not beats:
                self.succeeded_at = started_at
                continue
            try:
                results = service.store.heartbeat(beats)
            except Exception as exc:  # the database is away: beat again next time
                service.restore(attempts, beats)
                log.warning("heartbeat of %d attempts failed: %s", len(beats), exc)
                continue
            self.succeeded_at = started_at
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self.loop.call_soon_threadsafe(service.apply, attempts, results)


class LoopWatch:
    """Warns once per episode when the event loop has not turned for ``threshold_s``, naming
    the job whose async handler holds it."""

    TICK_S = 0.1

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        threshold_s: float,
        attempt_of: Callable[[asyncio.Task[object] | None], Attempt | None],
    ) -> None:
        self.loop = loop
        self.threshold_s = threshold_s
        self._attempt_of = attempt_of
        self._last_turn = time.monotonic()
        self._warned = False
        self._stop = threading.Event()
        self._handle: asyncio.TimerHandle | None = None
        self._thread = threading.Thread(target=self._watch, name="awa-loop-watch", daemon=True)

    def start(self) -> None:
        self._turned()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._handle is not None:
            self._handle.cancel()

    def _turned(self) -> None:
        """On the loop, every ``TICK_S``: the loop is turning."""
        self._last_turn = time.monotonic()
        self._warned = False
        if not self._stop.is_set():
            self._handle = self.loop.call_later(self.TICK_S, self._turned)

    def _watch(self) -> None:
        while not self._stop.wait(min(self.TICK_S, self.threshold_s / 2)):
            blocked_s = time.monotonic() - self._last_turn
            if blocked_s < self.threshold_s or self._warned:
                continue
            self._warned = True
            task = asyncio.current_task(self.loop)
            attempt = self._attempt_of(task) if task is not None else None
            if attempt is None:
                log.warning(
                    "the event loop has been blocked for %.1fs (not by a job's handler)",
                    blocked_s,
                )
                continue
            record = attempt.record
            log.warning(
                "the event loop has been blocked for %.1fs by job %s (kind %s, queue %s):"
                " async handlers must not block; make it a sync handler or use"
                " asyncio.to_thread for the blocking part",
                blocked_s,
                record.id,
                record.kind,
                record.queue,
                extra={"job_id": record.id, "kind": record.kind, "queue": record.queue},
            )
