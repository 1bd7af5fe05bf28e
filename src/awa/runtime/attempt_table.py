"""The attempts a worker process runs, and the outcomes waiting to be written.

Owned by the event loop. Other threads only take snapshots (``attempts()``), which is safe:
copying a dict's values is one step for the interpreter.
"""

from __future__ import annotations

import asyncio
from collections import Counter
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
    def __init__(self, on_released: Callable[[str], None]) -> None:
        """``on_released(queue)`` is called when an attempt frees a slot of ``queue``."""
        self._attempts: dict[Lease, Attempt] = {}
        self._running: Counter[str] = Counter()
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

    def release(self, attempt: Attempt) -> None:
        """Free the attempt's slot (once)."""
        if self._attempts.pop(attempt.lease, None) is None:
            return
        self._running[attempt.config.queue] -= 1
        self._on_released(attempt.config.queue)
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
