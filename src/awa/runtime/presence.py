"""A worker's presence: which kinds it handles on each queue it works, recorded in the store
(``awa.ports.TracksWorkers``) so ``awa queue stats`` can name the kinds that wait where no
live worker takes them, e.g. jobs a producer put on ``default`` while their handler listens
on another queue."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from awa.domain import AwaError
from awa.ports import TracksWorkers
from awa.runtime.registry import Task
from awa.runtime.store_calls import StoreCalls

__all__ = ["PRESENCE_TTL_INTERVALS", "PresenceService"]

log = logging.getLogger("awa.runtime")

#: a record lapses after this many intervals without renewal: one slow pass is not death
PRESENCE_TTL_INTERVALS = 3


class PresenceService:
    """Records, every ``interval_s``, the kinds this worker handles per queue."""

    name = "presence"

    def __init__(
        self,
        store: TracksWorkers,
        store_call: StoreCalls,
        *,
        owner: str,
        queues: Iterable[str],
        tasks: Iterable[Task],
        interval_s: float,
    ) -> None:
        self._store = store
        self._call = store_call
        self.owner = owner
        worked = list(queues)
        self.kinds = {q: sorted(t.kind for t in tasks if t.queue == q) for q in worked}
        self.interval_s = interval_s

    async def run_once(self, now: datetime) -> float | None:
        ttl_s = PRESENCE_TTL_INTERVALS * self.interval_s
        await self._call(self._store.record_worker, self.owner, self.kinds, ttl_s=ttl_s)
        return self.interval_s

    async def forget(self) -> None:
        """The worker stops: its record goes now (else it lapses on its own)."""
        try:
            await self._call(self._store.forget_worker, self.owner)
        except AwaError as exc:
            log.warning("could not remove this worker's record (it will lapse): %s", exc)
