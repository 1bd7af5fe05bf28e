"""Time as a port: only ``SystemClock`` reads the wall clock."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Protocol

__all__ = ["Clock", "SystemClock"]


class Clock(Protocol):
    """Tells the time (aware UTC) and lets the one loop that owns sleeping wait for it."""

    def now(self) -> datetime: ...

    async def sleep_until(self, when: datetime) -> None:
        """Return once ``now() >= when``."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    async def sleep_until(self, when: datetime) -> None:
        delay_s = (when - self.now()).total_seconds()
        if delay_s > 0:
            await asyncio.sleep(delay_s)
