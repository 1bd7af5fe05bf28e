"""Scheduling in the simulated world: periodic schedules every process registers, producers
that insert unique jobs, and the laws both must keep.

* No fire is enqueued twice: at most one job per ``(schedule, fire time)``, whichever leaders
  planned it, crashed or were paused in between (``fire_enqueued``).
* No fire is skipped while a leader lives: a ``catch_up`` schedule's fires are every cron time
  from its first to its last; a ``coalesce`` schedule's are every cron time of the calm phase
  (when a leader is up throughout), from the moment a new leader has had time to take over
  (``fire_gaps``).
* Never two holders of a unique key: an insert answered with a holder (or refused for one) met
  a job that holds the key; an insert that went through met none; and at any moment no two
  jobs hold one key (``unique_violations``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from awa.domain import (
    DEFAULT_UNIQUE_STATES,
    Job,
    JobState,
    NewJob,
    Schedule,
    Unique,
    holds_unique_key,
)
from awa.domain.periodic import PERIODIC_FIRE_AT, PERIODIC_NAME, PERIODIC_TRIGGERED
from awa.domain.states import TERMINAL_STATES

__all__ = [
    "SCHEDULES",
    "UNIQUE_KIND",
    "fire_gaps",
    "fire_of",
    "unique_job",
    "unique_violations",
]

SCHEDULES = (
    Schedule(
        name="tick",
        cron="*/10 * * * * *",
        job=NewJob(kind="sim", queue="default", args={"periodic": "tick"}),
        missed_fire_policy="coalesce",
    ),
    Schedule(
        name="sweep",
        cron="*/30 * * * * *",
        job=NewJob(kind="sim", queue="bulk", args={"periodic": "sweep"}),
        missed_fire_policy="catch_up",
    ),
)
UNIQUE_KIND = "unique_sim"
_KEYS = 4
_STATE_SETS = (DEFAULT_UNIQUE_STATES, frozenset(JobState) - TERMINAL_STATES)


def unique_job(key: int, states: int, queue: str) -> NewJob:
    """A producer's unique job: one of a few keys, with one of two safe state sets."""
    unique = Unique(by_args=["key"], states=_STATE_SETS[states % len(_STATE_SETS)])
    return NewJob(kind=UNIQUE_KIND, queue=queue, args={"key": key % _KEYS}, unique=unique)


def fire_of(job: Job) -> tuple[str, datetime] | None:
    """The ``(schedule, fire time)`` a job was enqueued for, if a schedule enqueued it (a
    trigger by hand is not a fire)."""
    name = job.metadata.get(PERIODIC_NAME)
    fire_at = job.metadata.get(PERIODIC_FIRE_AT)
    if name is None or fire_at is None or job.metadata.get(PERIODIC_TRIGGERED):
        return None
    return str(name), datetime.fromisoformat(str(fire_at))


def fire_gaps(
    fired: Mapping[str, Iterable[datetime]],
    calm_from: datetime,
    calm_until: datetime,
) -> list[str]:
    """Cron times a leader should have fired and nobody did: every time between a
    ``catch_up`` schedule's first and last fire, and every time of the calm window for a
    ``coalesce`` one."""
    gaps: list[str] = []
    for schedule in SCHEDULES:
        times = sorted(fired.get(schedule.name, ()))
        if schedule.missed_fire_policy == "catch_up" and times:
            start, end = times[0], times[-1]
        elif schedule.missed_fire_policy == "coalesce":
            start, end = schedule.next_after(calm_from), calm_until
        else:
            continue
        present = set(times)
        moment = start
        while moment <= end:
            if moment not in present:
                gaps.append(f"{schedule.name} skipped its fire at {moment.isoformat()}")
            moment = schedule.next_after(moment)
    return gaps


def unique_violations(jobs: Sequence[Job]) -> list[str]:
    """Two jobs holding one key (the jobs given are the ones among the jobs, not the DLQ)."""
    holders: dict[str, int] = {}
    found = []
    for job in jobs:
        if not holds_unique_key(job) or job.unique_key is None:
            continue
        other = holders.setdefault(job.unique_key, job.id)
        if other != job.id:
            found.append(f"jobs {other} and {job.id} both hold unique key {job.unique_key}")
    return found
