"""A clock that moves only when a test moves it."""

from __future__ import annotations

import asyncio
import threading
from datetime import datetime, timedelta, timezone

from awa.domain import ValidationError

__all__ = ["ManualClock"]

_EPOCH = datetime(2030, 1, 1, tzinfo=timezone.utc)


class ManualClock:
    """Time stands still until ``advance`` or ``set`` moves it; sleepers whose moment has come
    wake up then. Thread-safe, and usable from several event loops."""

    def __init__(self, start: datetime = _EPOCH) -> None:
        if start.utcoffset() is None:
            raise ValidationError("ManualClock needs a timezone-aware start time")
        self._now = start
        self._lock = threading.Lock()
        self._sleepers: list[tuple[datetime, asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        if seconds < 0:
            raise ValidationError("a ManualClock only moves forward")
        with self._lock:
            target = self._now + timedelta(seconds=seconds)
        return self.set(target)

    def set(self, when: datetime) -> datetime:
        with self._lock:
            if when < self._now:
                raise ValidationError("a ManualClock only moves forward")
            self._now = when
            due = [s for s in self._sleepers if s[0] <= when]
            self._sleepers = [s for s in self._sleepers if s[0] > when]
        for _, loop, future in due:
            loop.call_soon_threadsafe(_wake, future)
        return when

    def next_wakeup(self) -> datetime | None:
        """The earliest moment a sleeper waits for, to jump straight to it."""
        with self._lock:
            return min((s[0] for s in self._sleepers), default=None)

    async def sleep_until(self, when: datetime) -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if when <= self._now:
                return
            self._sleepers.append((when, loop, future))
        try:
            await future
        finally:
            with self._lock:
                self._sleepers = [s for s in self._sleepers if s[2] is not future]


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
