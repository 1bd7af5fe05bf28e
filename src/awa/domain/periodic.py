"""Periodic jobs: when a schedule fires, and which fires are due.

A ``Schedule`` is a cron expression (5 fields, or 6 with seconds first) read in a time zone,
and the job each fire inserts. A store keeps it as a ``ScheduleRecord`` with the time of its
next fire. The maintenance leader asks ``plan_fires`` which fires are due at the store's
``now`` and hands the ``FirePlan`` back to the store, which inserts its jobs in the same
statement that moves the schedule's next fire on from ``expected_next`` (a compare-and-set):
a plan made by a leader that lost the race (another leader fired first, or the schedule was
paused or changed) inserts nothing, so no fire is enqueued twice.

Missed fires (no leader was up, or it was paused): ``coalesce`` enqueues only the latest due
fire, ``catch_up`` every one of them, ``CATCH_UP_FIRES_MAX`` per plan. Times follow cron in
the schedule's time zone (``cronsim``, with Debian cron's rules at DST changes: a fixed-time
fire in the hour that is skipped runs once the clocks have jumped, and one in the hour that
repeats runs once) and are stored in UTC.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs
from cronsim import CronSim, CronSimError

from awa.domain.errors import ValidationError
from awa.domain.validation import INSTANT_MAX, shown
from awa.domain.values import NewJob

__all__ = [
    "CATCH_UP_FIRES_MAX",
    "MISSED_FIRE_POLICIES",
    "FirePlan",
    "MissedFirePolicy",
    "Schedule",
    "ScheduleRecord",
    "check_schedule_name",
    "fire_metadata",
    "plan_fires",
    "register",
    "resume",
    "set_paused",
    "triggered_job",
]

MissedFirePolicy = Literal["coalesce", "catch_up"]
MISSED_FIRE_POLICIES: tuple[MissedFirePolicy, ...] = ("coalesce", "catch_up")
#: the most missed fires one plan enqueues under ``catch_up``; the next plan goes on from there
CATCH_UP_FIRES_MAX = 100
#: the metadata every fired job carries
PERIODIC_NAME = "periodic_name"
PERIODIC_FIRE_AT = "periodic_fire_at"
#: ... and a run an operator triggered, outside the cadence, also this (``True``)
PERIODIC_TRIGGERED = "periodic_triggered"

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}\Z", re.ASCII)
_SECOND = timedelta(seconds=1)


def check_schedule_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValidationError(
            f"invalid schedule name {shown(name)}: use 1-128 letters, digits, '_', '.', ':' or '-',"
            " starting with a letter, digit or '_'"
        )
    return name


#: zone names that load but do not mean one place's time on every machine, and why
_NOT_A_PLACE = {
    "localtime": "is each machine's own zone",
    "posixrules": "is each machine's copy of some zone",
    "Factory": "is the tz database's placeholder, no place's time",
}
#: folders of copies: ``right/`` zones count leap seconds, which cron times and the stores'
#: clocks do not; ``posix/`` repeats the canonical zones under second names
_COPIES = {
    "right/": "counts leap seconds, which cron times do not",
    "posix/": "is a second name of a canonical zone",
}


def _timezone(name: object) -> str:
    """An IANA time zone name that means the same on every machine: ``zoneinfo`` loads it,
    and it is neither one of ``_NOT_A_PLACE`` nor under ``_COPIES``."""
    if not isinstance(name, str) or not name or name.startswith(("/", ".")) or ".." in name:
        raise ValidationError(f"invalid time zone {name!r}: use an IANA name like 'Europe/Paris'")
    why = _NOT_A_PLACE.get(name) or next(
        (why for folder, why in _COPIES.items() if name.startswith(folder)), None
    )
    if why is not None:
        raise ValidationError(
            f"time zone {name!r} {why}: use an IANA name like 'Europe/Paris' or 'UTC'"
        )
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError(
            f"unknown time zone {name!r}: use an IANA name like 'Europe/Paris' or 'UTC'"
        ) from None
    return name


def _cron(expression: object) -> str:
    if not isinstance(expression, str):
        raise ValidationError(f"a cron expression is a string, got {shown(expression)}")
    fields = expression.split()
    if len(fields) not in (5, 6):
        raise ValidationError(
            f"cron expression {shown(expression)} has {len(fields)} fields: use 5 (minute hour"
            " day-of-month month day-of-week) or 6 (seconds first)"
        )
    normalised = " ".join(fields)
    try:
        next(CronSim(normalised, datetime(2000, 1, 1, tzinfo=timezone.utc)))
    except (CronSimError, StopIteration) as exc:
        raise ValidationError(f"invalid cron expression {shown(expression)}: {exc}") from None
    return normalised


def _policy(value: object) -> MissedFirePolicy:
    if value not in MISSED_FIRE_POLICIES:
        raise ValidationError(f"missed_fire_policy is 'coalesce' or 'catch_up', got {shown(value)}")
    return value


def _job(value: object) -> NewJob:
    if not isinstance(value, NewJob):
        raise ValidationError(f"a schedule's job is a NewJob, got {type(value).__name__}")
    if value.run_at is not None:
        raise ValidationError("a periodic job runs at its fire time: give it no run_at")
    return value


@attrs.frozen(kw_only=True)
class Schedule:
    """A periodic job as registered: its name, when it fires, and the job each fire inserts
    (``run_at`` is the fire time; the metadata gains ``periodic_name`` and
    ``periodic_fire_at``)."""

    name: str = attrs.field(converter=check_schedule_name)
    cron: str = attrs.field(converter=_cron)
    job: NewJob = attrs.field(converter=_job)
    timezone: str = attrs.field(default="UTC", converter=_timezone)
    missed_fire_policy: MissedFirePolicy = attrs.field(default="coalesce", converter=_policy)

    def _times(self, start: datetime, *, reverse: bool = False) -> Iterator[datetime]:
        local = start.astimezone(ZoneInfo(self.timezone))
        moments = iter(CronSim(self.cron, local, reverse=reverse))
        while True:
            try:
                fire_at = next(moments).astimezone(timezone.utc)
            except (StopIteration, OverflowError):  # cronsim walks off the end of year 9999
                return
            if fire_at > INSTANT_MAX:  # no job may run later (awa.domain.validation)
                return
            yield fire_at

    def fires_after(self, moment: datetime) -> Iterator[datetime]:
        """Fire times strictly after ``moment``, in order, in UTC, up to ``INSTANT_MAX``."""
        return self._times(moment)

    def next_after(self, moment: datetime) -> datetime:
        """The first fire after ``moment``; ``INSTANT_MAX`` when none comes before it: a
        schedule whose next fire is there never fires again (``plan_fires``)."""
        return next(self.fires_after(moment), INSTANT_MAX)

    def latest_at_or_before(self, moment: datetime) -> datetime:
        """The last fire time no later than ``moment``."""
        # fires fall on whole seconds, and a reverse walk yields times strictly before its
        # start: start it on the next whole second, so that ``moment`` itself is yielded when
        # it fires (cronsim before 2.8, the newest on Python 3.10, drops a start's
        # microseconds: from ``moment`` plus 1 µs it would skip ``moment``)
        return next(self._times(moment.replace(microsecond=0) + _SECOND, reverse=True))

    def describe(self) -> str:
        """The timing in words: "At 03:00 every day (Europe/Paris)"."""
        said = CronSim(self.cron, datetime(2000, 1, 1, tzinfo=timezone.utc)).explain()
        return f"{said} ({self.timezone})"

    def same_timing(self, other: Schedule) -> bool:
        return (self.cron, self.timezone) == (other.cron, other.timezone)


@attrs.frozen(kw_only=True)
class ScheduleRecord:
    """A schedule as a store keeps it."""

    schedule: Schedule
    next_fire_at: datetime
    last_fire_at: datetime | None = None
    paused: bool = False
    created_at: datetime
    updated_at: datetime

    @property
    def name(self) -> str:
        return self.schedule.name


@attrs.frozen
class FirePlan:
    """Fires a leader found due at ``planned_at``; the store applies it only while the
    schedule's next fire is still ``expected_next`` (and it is not paused), moving it on to
    ``following`` in the statement that inserts ``jobs``."""

    name: str
    expected_next: datetime
    fires: tuple[datetime, ...]
    following: datetime
    jobs: tuple[NewJob, ...]
    planned_at: datetime


def fire_metadata(name: str, fire_at: datetime) -> dict[str, str]:
    return {PERIODIC_NAME: name, PERIODIC_FIRE_AT: fire_at.astimezone(timezone.utc).isoformat()}


def _fired_job(schedule: Schedule, fire_at: datetime, run_at: datetime | None) -> NewJob:
    metadata: dict[str, object] = {**schedule.job.metadata, **fire_metadata(schedule.name, fire_at)}
    if run_at is None:
        metadata[PERIODIC_TRIGGERED] = True
    return attrs.evolve(schedule.job, run_at=run_at, metadata=metadata)


def register(schedule: Schedule, current: ScheduleRecord | None, now: datetime) -> ScheduleRecord:
    """Registering is additive and idempotent: a new schedule first fires after ``now``; the
    same one again changes nothing; a changed one keeps its pause and last fire, and fires
    from ``now`` on when its timing changed (never retroactively)."""
    if current is None:
        return ScheduleRecord(
            schedule=schedule,
            next_fire_at=schedule.next_after(now),
            created_at=now,
            updated_at=now,
        )
    if current.schedule == schedule:
        return current
    next_fire_at = current.next_fire_at
    if not current.schedule.same_timing(schedule):
        next_fire_at = schedule.next_after(now)
    return attrs.evolve(current, schedule=schedule, next_fire_at=next_fire_at, updated_at=now)


def set_paused(record: ScheduleRecord, paused: bool, now: datetime) -> ScheduleRecord:
    """Pause or resume. A resumed schedule fires from ``now`` on: what it missed while paused
    is not made up, whatever its missed-fire policy."""
    if paused == record.paused:
        return record
    if paused:
        return attrs.evolve(record, paused=True, updated_at=now)
    return resume(record, now)


def resume(record: ScheduleRecord, now: datetime) -> ScheduleRecord:
    return attrs.evolve(
        record,
        paused=False,
        next_fire_at=record.schedule.next_after(now),
        updated_at=now,
    )


def plan_fires(record: ScheduleRecord, now: datetime) -> FirePlan | None:
    """The fires due at ``now`` (``None`` when none is, or the schedule is paused)."""
    schedule = record.schedule
    if record.paused or record.next_fire_at > now or record.next_fire_at >= INSTANT_MAX:
        return None
    if schedule.missed_fire_policy == "coalesce":
        # never before the fire the store expects, whatever a DST rule makes of a reverse walk
        fires: tuple[datetime, ...] = (max(schedule.latest_at_or_before(now), record.next_fire_at),)
    else:
        due: list[datetime] = [record.next_fire_at]
        for fire_at in schedule.fires_after(record.next_fire_at):
            if fire_at > now or len(due) == CATCH_UP_FIRES_MAX:
                break
            due.append(fire_at)
        fires = tuple(due)
    return FirePlan(
        name=schedule.name,
        expected_next=record.next_fire_at,
        fires=fires,
        following=schedule.next_after(fires[-1]),
        jobs=tuple(_fired_job(schedule, fire_at, fire_at) for fire_at in fires),
        planned_at=now,
    )


def triggered_job(record: ScheduleRecord, now: datetime) -> NewJob:
    """The job an operator's trigger inserts: one run now, outside the cadence (the schedule
    itself does not move)."""
    return _fired_job(record.schedule, now, None)
