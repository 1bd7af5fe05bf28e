"""The operator's schedule verbs (``awa.ports.OperatorStore``): register, list, pause or
resume, trigger and remove periodic schedules."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from awa.adapters._fencing import Writes
from awa.adapters.core.producing import Producing
from awa.adapters.core.transaction import Transaction
from awa.domain import Job, Schedule, ScheduleNotFound, ScheduleRecord, periodic
from awa.domain.validation import check_flag
from awa.ports.checks import check_schedule_name, check_schedules

__all__ = ["Schedules"]


class Schedules(Producing):
    """Schedule verbs; a trigger inserts as a producer does."""

    @abc.abstractmethod
    def list_schedules(self) -> list[ScheduleRecord]:
        """Every schedule, by name."""

    @abc.abstractmethod
    def _remove_schedule(self, name: str) -> bool:
        """Delete a schedule; whether there was one."""

    def register_schedules(self, schedules: Sequence[Schedule]) -> list[ScheduleRecord]:
        check_schedules(schedules)
        if not schedules:
            return []
        with self._transaction("registering schedules") as tx:
            current = tx.lock_schedules([s.name for s in schedules])
            now = tx.now()  # once the schedules are locked: the time the change takes effect
            records = [periodic.register(s, current.get(s.name), now) for s in schedules]
            writes = Writes()
            writes.schedules.extend(r for r in records if r != current.get(r.name))
            if writes:
                tx.write(writes)
            return records

    def set_schedule_paused(self, name: str, paused: bool) -> ScheduleRecord:
        check_schedule_name(name)
        check_flag("paused", paused)
        with self._transaction("pausing a schedule" if paused else "resuming a schedule") as tx:
            current = _schedule(tx, name)
            changed = periodic.set_paused(current, paused, tx.now())
            if changed != current:
                writes = Writes()
                writes.schedules.append(changed)
                tx.write(writes)
            return changed

    def trigger_schedule(self, name: str) -> Job:
        check_schedule_name(name)
        with self._transaction("triggering a schedule") as tx:
            job = periodic.triggered_job(_schedule(tx, name), tx.now())
        [inserted] = self._insert([job], "raise")
        return inserted

    def remove_schedule(self, name: str) -> None:
        check_schedule_name(name)
        if not self._remove_schedule(name):
            raise ScheduleNotFound(name)


def _schedule(tx: Transaction, name: str) -> ScheduleRecord:
    found = tx.lock_schedules([name]).get(name)
    if found is None:
        raise ScheduleNotFound(name)
    return found
