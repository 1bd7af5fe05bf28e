"""The periodic service: the maintenance leader enqueues each due fire of every schedule.

It works in two steps, each one run of the service: look (lead, then ask the store which fires
are due at its own clock, ``MaintenanceStore.plan_fires``), then fire (``.fire`` for each
plan, the compare-and-set that enqueues it). A leader paused between the two (a long GC, a
stalled connection, SIGSTOP) may wake up after another process took over and fired the same
fires: its compare-and-set then finds the schedule moved on and enqueues nothing. The simulator
runs the steps apart on purpose, so that this race is exercised rather than assumed.

A process that leads fires the schedules every process registered, its own or not.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from awa.domain import FirePlan
from awa.runtime.leading import LeaderService

__all__ = ["SCHEDULES_PER_LOOK", "PeriodicService"]

log = logging.getLogger("awa.runtime")

#: schedules one look plans for (more due ones are looked at again at once)
SCHEDULES_PER_LOOK = 100


class PeriodicService(LeaderService):
    """Plans due fires while leading, then fires them; sleeps until the next fire."""

    name = "periodic"

    #: plans looked at, not yet fired (none until the first look)
    planned: Sequence[FirePlan] = ()

    async def run_once(self, now: datetime) -> float | None:
        if self.planned:
            await self._fire()
            return 0.0  # look again at once: more may be due
        return await self._look()

    async def _look(self) -> float:
        interval_s = self.config.maintenance_interval_s
        # the maintenance service's leadership, renewed here too
        if not await self._call(self._store.try_lead, self.owner, ttl_s=self.lead_ttl_s):
            return interval_s
        round_ = await self._call(self._store.plan_fires, limit=SCHEDULES_PER_LOOK)
        self.planned = round_.plans
        if self.planned or round_.more:
            return 0.0
        if round_.next_fire_at is None:
            return interval_s  # a schedule another process registers is seen within this
        until_s = (round_.next_fire_at - round_.now).total_seconds()
        return max(0.0, min(until_s, interval_s))

    async def _fire(self) -> None:
        plans, self.planned = self.planned, ()
        for plan in plans:
            fired = await self._call(self._store.fire, plan)
            if fired is None:
                log.info("periodic %s: another leader fired first; nothing enqueued", plan.name)
                continue
            self._stats.fired += len(fired)
            log.debug("periodic %s fired %d job(s) for %s", plan.name, len(fired), plan.fires)
