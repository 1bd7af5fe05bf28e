"""The attempts a worker process runs, and the outcomes waiting to be written.

Owned by the event loop. Other threads only take snapshots (``attempts()``), which is safe:
copying a dict's values is one step for the interpreter.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Callable

import attrs

from awa.domain import Job as JobRecord
from awa.domain import Lease
from awa.ports import Finish
from awa.runtime.attempts import Attempt

__all__ = ["AttemptTable", "PendingOutcome"]


@attrs.frozen
class PendingOutcome:
    """An attempt's outcome waiting to be written, with what observers want to know of it:
    the job as claimed and how long the handler ran."""

    finish: Finish
    record: JobRecord
    handler_s: float


class AttemptTable:
    """Every attempt this process holds: running ones, and ones claimed ahead that wait for a
    slot (heartbeats, cancels, deadlines and shutdown treat both alike)."""

    def __init__(self, on_released: Callable[[str], None]) -> None:
        """``on_released(queue)`` is called when an attempt frees a slot of ``queue``."""
        self._attempts: dict[Lease, Attempt] = {}
        self._running: Counter[str] = Counter()
        self._waiting: dict[str, deque[Attempt]] = {}
        self._freed: Counter[str] = Counter()
        self._finishes: list[PendingOutcome] = []
        self._on_released = on_released
        self._idle: asyncio.Event | None = None

    def attach(self) -> None:
        self._idle = asyncio.Event()

    # -- attempts -----------------------------------------------------------------------------
    def add(self, attempt: Attempt) -> None:
        self._attempts[attempt.lease] = attempt
        self._running[attempt.config.queue] += 1
        if self._idle is not None:
            self._idle.clear()

    def add_waiting(self, attempt: Attempt) -> None:
        """An attempt claimed ahead of a free slot: it starts when one frees."""
        self._attempts[attempt.lease] = attempt
        attempt.waiting_slot = True
        self._waiting.setdefault(attempt.config.queue, deque()).append(attempt)
        if self._idle is not None:
            self._idle.clear()

    def next_waiting(self, queue: str) -> Attempt | None:
        """The oldest attempt waiting for a slot of ``queue``, now counted as running; those
        that ended while waiting (cancelled, rescued) leave the table on the way."""
        waiting = self._waiting.get(queue)
        while waiting:
            attempt = waiting.popleft()
            attempt.waiting_slot = False
            if not attempt.ended:
                self._running[queue] += 1
                return attempt
            self._forget(attempt)
        return None

    def waiting(self, queue: str) -> int:
        waiting = self._waiting.get(queue)
        return len(waiting) if waiting else 0

    def take_waiting(self) -> list[Attempt]:
        """Every attempt still waiting for a slot, out of the table (shutdown releases them)."""
        taken = [a for waiting in self._waiting.values() for a in waiting if not a.ended]
        for waiting in self._waiting.values():
            for attempt in waiting:
                attempt.waiting_slot = False
                self._forget(attempt)
            waiting.clear()
        return taken

    def freed(self, queue: str) -> int:
        """How many of ``queue``'s slots have been freed so far (a running count)."""
        return self._freed[queue]

    def release(self, attempt: Attempt) -> None:
        """Free the attempt's slot (once)."""
        queue = attempt.config.queue
        if attempt.waiting_slot:  # ended before it started: it held no slot
            attempt.waiting_slot = False
            self._waiting[queue].remove(attempt)
            self._forget(attempt)
            return
        if self._attempts.pop(attempt.lease, None) is None:
            return
        self._running[queue] -= 1
        self._freed[queue] += 1
        self._on_released(queue)
        if not self._attempts and self._idle is not None:
            self._idle.set()

    def _forget(self, attempt: Attempt) -> None:
        self._attempts.pop(attempt.lease, None)
        if not self._attempts and self._idle is not None:
            self._idle.set()

    def get(self, lease: Lease) -> Attempt | None:
        return self._attempts.get(lease)

    def attempts(self) -> list[Attempt]:
        return list(self._attempts.values())

    def running(self, queue: str) -> int:
        return self._running[queue]

    @property
    def idle(self) -> asyncio.Event:
        """Set while no attempt runs."""
        assert self._idle is not None, "the runtime has not started"
        return self._idle

    def of_task(self, task: asyncio.Task[object] | None) -> Attempt | None:
        """The attempt whose async handler runs as ``task`` (any thread may ask)."""
        for attempt in self.attempts():
            if attempt.future is task:
                return attempt
        return None

    # -- outcomes waiting to be written ---------------------------------------------------------
    def add_finish(self, pending: PendingOutcome) -> None:
        self._finishes.append(pending)

    def take_finishes(self, limit: int) -> list[PendingOutcome]:
        batch, self._finishes = self._finishes[:limit], self._finishes[limit:]
        return batch

    def requeue_finishes(self, batch: list[PendingOutcome]) -> None:
        self._finishes[:0] = batch

    def has_finishes(self) -> bool:
        return bool(self._finishes)

    def drop_finishes(self) -> None:
        self._finishes.clear()

    def pending_outcomes(self) -> list[PendingOutcome]:
        """The outcomes waiting to be written, oldest first (a copy)."""
        return list(self._finishes)

    def pending_finishes(self) -> list[Lease]:
        """Attempts whose outcome is decided but not yet written."""
        return [pending.finish.lease for pending in self._finishes]
