"""What the SQL stores (PostgreSQL, SQLite) share of their rows: the job's and the schedule's
columns in the order every statement selects them, a state by the text a row stores, the
unique-states bit mask, a unique rule's stored options, and the fast way a row of job columns
becomes a ``Job`` (``job_of``) and one of schedule columns a ``ScheduleRecord``
(``schedule_of``).

Each store keeps some values in a form of its own (a time is a ``timestamptz`` on one and
integer microseconds on the other; JSON is loaded by psycopg on one and is TEXT on the other);
``StoredValues`` names how that store reads each such form, so each reading is written once. A
reader raises one of the store's ``misread`` exceptions on a value of the wrong shape; the store
then reads the row column by column (``awa.adapters._unreadable``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import attrs

from awa.adapters._unreadable import Decoders, read_job
from awa.domain import ErrorEntry, Job, JobState, NewJob, Schedule, ScheduleRecord, Unique

__all__ = [
    "JOB_COLUMNS",
    "SCHEDULE_COLUMNS",
    "STATES",
    "StoredValues",
    "job_of",
    "read_job_row",
    "schedule_of",
    "states_of",
    "unique_of",
    "unique_options",
    "unique_states_mask",
]

JOB_COLUMNS = (
    "id", "kind", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_lease",
    "run_at", "created_at", "tags", "metadata", "errors", "attempted_at", "heartbeat_at",
    "deadline_at", "finalized_at", "progress", "callback_id", "callback_timeout_at",
    "callback_result", "unique_key", "unique_states", "concurrency_key", "ordering_key",
)  # fmt: skip
SCHEDULE_COLUMNS = (
    "name", "cron", "timezone", "missed_fire_policy", "kind", "queue", "args", "priority",
    "max_attempts", "tags", "metadata", "unique_options", "paused", "next_fire_at",
    "last_fire_at", "created_at", "updated_at", "concurrency_key", "ordering_key",
)  # fmt: skip
_WIDTH = len(JOB_COLUMNS)
#: each state by the text a row stores it as
STATES = {state.value: state for state in JobState}
#: each state's bit in a unique-states mask, in the order of ``JobState`` (PostgreSQL's
#: ``awa.state_bit``, migration 0004; SQLite's migration 0001)
_STATE_BITS = {state: 1 << position for position, state in enumerate(JobState)}


@functools.lru_cache(maxsize=64)
def unique_states_mask(states: frozenset[JobState]) -> int | None:
    """A job's unique states as the bit mask the store keeps (``None``: none)."""
    return sum(_STATE_BITS[state] for state in states) or None


def states_of(mask: int | None) -> frozenset[JobState]:
    """The unique states a stored mask holds (``None`` or 0: none)."""
    return _states_of(mask) if mask else frozenset()


@functools.lru_cache(maxsize=64)
def _states_of(mask: int) -> frozenset[JobState]:
    return frozenset(state for state, bit in _STATE_BITS.items() if mask & bit)


def unique_options(unique: Unique | None) -> dict[str, Any] | None:
    """A schedule's unique rule as the JSON object its ``unique_options`` column stores."""
    if unique is None:
        return None
    by_args = list(unique.by_args) if isinstance(unique.by_args, tuple) else unique.by_args
    return {
        "by_args": by_args,
        "by_queue": unique.by_queue,
        "period": unique.period,
        "states": [state.value for state in JobState if state in unique.states],
    }


def unique_of(options: dict[str, Any] | None) -> Unique | None:
    """The unique rule a loaded ``unique_options`` object holds."""
    if options is None:
        return None
    return Unique(
        by_args=options["by_args"],
        by_queue=options["by_queue"],
        period=options["period"],
        states=options["states"],
    )


@attrs.frozen
class StoredValues:
    """How a store reads the values it keeps in a form of its own: the fast way, each reader
    raising one of ``misread`` on a value of the wrong shape, and column by column."""

    #: a time column as an aware UTC ``datetime`` (``None`` stays ``None``)
    time: Callable[[Any], Any]
    #: ``args`` and ``metadata``: a JSON object
    obj: Callable[[Any], dict[str, Any]]
    #: ``progress`` and ``callback_result``: any JSON value, or ``None``
    json: Callable[[Any], Any]
    tags: Callable[[Any], tuple[str, ...]]
    errors: Callable[[Any], tuple[ErrorEntry, ...]]
    #: a text column that may be ``None`` and is not a job's (a summary's ``last_error``)
    text: Callable[[Any], str | None]
    #: what the readers above raise on a value of the wrong shape
    misread: tuple[type[Exception], ...]
    #: how each job column is read when a row is read column by column
    decoders: Decoders
    #: a time outside the job's columns (``dlq_at``), the nearest readable one when it cannot
    #: be read: a count or a listing never stops for one row
    read_time: Callable[[Any], datetime | None]


def read_job_row(row: Sequence[Any], offset: int, stored: StoredValues) -> Job:
    """The job in ``row[offset:offset + len(JOB_COLUMNS)]``, the fast way (``job_of``) when
    the driver loaded every value (a tuple); a row holding a value this version cannot read
    is read column by column instead (``awa.adapters._unreadable``)."""
    values = row[offset : offset + _WIDTH]
    if type(row) is tuple:
        try:
            return job_of(values, stored)
        except stored.misread:
            pass  # a value of the wrong shape: read column by column below
    return read_job(JOB_COLUMNS, values, stored.decoders)


def job_of(values: Sequence[Any], stored: StoredValues) -> Job:
    """The job in ``values``, one per ``JOB_COLUMNS``, as the store keeps them."""
    (
        id_, kind, queue, args, state, priority, attempt, max_attempts, run_lease, run_at,
        created_at, tags, metadata, errors, attempted_at, heartbeat_at, deadline_at,
        finalized_at, progress, callback_id, callback_timeout_at, callback_result, unique_key,
        unique_states, concurrency_key, ordering_key,
    ) = values  # fmt: skip
    time, obj, json = stored.time, stored.obj, stored.json
    return Job(
        id=id_,
        kind=kind,
        queue=queue,
        args=obj(args),
        state=STATES[state],
        priority=priority,
        attempt=attempt,
        max_attempts=max_attempts,
        run_lease=run_lease,
        run_at=time(run_at),
        created_at=time(created_at),
        tags=stored.tags(tags),
        metadata=obj(metadata),
        errors=stored.errors(errors),
        attempted_at=time(attempted_at),
        heartbeat_at=time(heartbeat_at),
        deadline_at=time(deadline_at),
        finalized_at=time(finalized_at),
        progress=json(progress),
        callback_id=callback_id,
        callback_timeout_at=time(callback_timeout_at),
        callback_result=json(callback_result),
        unique_key=unique_key,
        unique_states=states_of(unique_states),
        concurrency_key=concurrency_key,
        ordering_key=ordering_key,
    )


def schedule_of(values: Sequence[Any], stored: StoredValues) -> ScheduleRecord:
    """The schedule in ``values``, one per ``SCHEDULE_COLUMNS``, as the store keeps them; the
    job it makes is checked as any ``NewJob`` is."""
    (
        name, cron, timezone_name, missed_fire_policy, kind, queue, args, priority, max_attempts,
        tags, metadata, options, paused, next_fire_at, last_fire_at, created_at, updated_at,
        concurrency_key, ordering_key,
    ) = values  # fmt: skip
    time, json = stored.time, stored.json
    job = NewJob(
        kind=kind,
        queue=queue,
        args=json(args),
        priority=priority,
        max_attempts=max_attempts,
        tags=tuple(json(tags)),
        metadata=json(metadata),
        unique=unique_of(json(options)),
        concurrency_key=concurrency_key,
        ordering_key=ordering_key,
    )
    schedule = Schedule(
        name=name, cron=cron, job=job, timezone=timezone_name, missed_fire_policy=missed_fire_policy
    )
    return ScheduleRecord(
        schedule=schedule,
        next_fire_at=time(next_fire_at),
        last_fire_at=time(last_fire_at),
        paused=bool(paused),
        created_at=time(created_at),
        updated_at=time(updated_at),
    )
