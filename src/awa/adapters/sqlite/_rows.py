"""The row boundary of the SQLite adapter: rows to domain values and domain values to named
parameters.

Times are INTEGER microseconds since the Unix epoch (UTC), so SQL compares and orders them as
numbers and a ``datetime`` comes back exactly as it went in. JSON values are TEXT written with
``ensure_ascii`` (so any Python string, even a lone surrogate, round-trips as the in-memory
store keeps it). A unique job's states are the PostgreSQL adapter's bit mask.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, overload

from awa.adapters._sql_rows import (
    JOB_COLUMNS,
    SCHEDULE_COLUMNS,
    STATES,
    StoredValues,
    read_job_row,
    schedule_of,
    states_of,
    unique_options,
    unique_states_mask,
)
from awa.adapters._unreadable import Decoders, TooEarly, TooLate, time_placeholder
from awa.domain import (
    DlqEntry,
    ErrorEntry,
    Job,
    ScheduleRecord,
    ValidationError,
)
from awa.domain.validation import INSTANT_MIN

__all__ = [
    "JOB_COLUMNS",
    "JOB_DECODERS",
    "JOB_WIDTH",
    "SCHEDULE_COLUMNS",
    "STATES",
    "STORED",
    "dlq_entry_from_row",
    "dump_json",
    "job_from_row",
    "job_params",
    "load_json",
    "micros",
    "read_time",
    "schedule_from_row",
    "schedule_params",
    "time_of",
    "write_params",
]

JOB_WIDTH = len(JOB_COLUMNS)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


@overload
def micros(when: datetime) -> int: ...
@overload
def micros(when: None) -> None: ...
def micros(when: datetime | None) -> int | None:
    """A time as stored: whole microseconds since the epoch."""
    return None if when is None else (when - _EPOCH) // _MICROSECOND


@overload
def time_of(stored: int) -> datetime: ...
@overload
def time_of(stored: None) -> None: ...
def time_of(stored: int | None) -> datetime | None:
    return None if stored is None else _EPOCH + stored * _MICROSECOND


def dump_json(value: Any) -> str:
    """JSON text for a TEXT column; a value JSON cannot hold is the caller's input."""
    if not value and isinstance(value, (dict, list, tuple)):  # most rows: nothing in it
        return "[]" if isinstance(value, (list, tuple)) else "{}"
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"value cannot be stored as JSON: {exc}") from None
    except RecursionError:
        raise ValidationError("value is nested too deeply to be stored as JSON") from None


def load_json(text: str | None) -> Any:
    if text is None:
        return None
    if text == "{}":  # most rows: no metadata, no args
        return {}
    return json.loads(text)


def _errors_json(errors: Sequence[ErrorEntry]) -> str:
    if not errors:
        return "[]"
    entries = []
    for error in errors:
        entry: dict[str, Any] = {"error": error.error, "attempt": error.attempt}
        entry["at"] = micros(error.at)
        if error.terminal:
            entry["terminal"] = True
        if error.traceback is not None:
            entry["traceback"] = error.traceback
        entries.append(entry)
    return dump_json(entries)


def _errors_of(text: str) -> tuple[ErrorEntry, ...]:
    if text == "[]":
        return ()
    return tuple(
        ErrorEntry(
            error=entry["error"],
            attempt=entry["attempt"],
            at=time_of(entry["at"]),
            terminal=entry.get("terminal", False),
            traceback=entry.get("traceback"),
        )
        for entry in json.loads(text)
    )


def job_from_row(row: Sequence[Any], offset: int = 0) -> Job:
    """The job in ``row[offset:offset + JOB_WIDTH]``, in ``JOB_COLUMNS`` order; a row holding
    a value this version cannot read is read column by column instead
    (``awa.adapters._unreadable``)."""
    return read_job_row(row, offset, STORED)


# -- column by column: a row the fast way could not read -------------------------------------


def _time(stored: Any) -> datetime | None:
    if stored is None:
        return None
    if type(stored) is not int:
        raise TypeError(f"not a time but a {type(stored).__name__}")
    try:
        return time_of(stored)
    except OverflowError:
        raise (TooEarly if stored < 0 else TooLate)(stored) from None


def _integer(stored: Any) -> int:
    if type(stored) is not int:
        raise TypeError(f"not an integer but a {type(stored).__name__}")
    return stored


def _text(stored: Any) -> str:
    if type(stored) is not str:
        raise TypeError(f"not text but a {type(stored).__name__}")
    return stored


def _optional_text(stored: Any) -> str | None:
    return None if stored is None else _text(stored)


def _object(stored: Any) -> dict[str, Any]:
    value = load_json(_text(stored))
    if type(value) is not dict:
        raise TypeError(f"not a JSON object but a {type(value).__name__}")
    return value


def _optional_object(stored: Any) -> dict[str, Any] | None:
    return None if stored is None else _object(stored)


def _tags(stored: Any) -> tuple[str, ...]:
    value = json.loads(_text(stored))
    if type(value) is not list or not all(type(tag) is str for tag in value):
        raise TypeError("not a list of strings")
    return tuple(value)


def _any_json(stored: Any) -> Any:
    return None if stored is None else load_json(_text(stored))


#: how each job column is read when a row is read column by column
JOB_DECODERS: Decoders = {
    "id": _integer,
    "kind": _text,
    "queue": _text,
    "args": _object,
    "state": STATES.__getitem__,
    "priority": _integer,
    "attempt": _integer,
    "max_attempts": _integer,
    "run_lease": _integer,
    "run_at": _time,
    "created_at": _time,
    "tags": _tags,
    "metadata": _object,
    "errors": lambda stored: _errors_of(_text(stored)),
    "attempted_at": _time,
    "heartbeat_at": _time,
    "deadline_at": _time,
    "finalized_at": _time,
    "progress": _optional_object,
    "callback_id": _optional_text,
    "callback_timeout_at": _time,
    "callback_result": _any_json,
    "unique_key": _optional_text,
    "unique_states": lambda stored: states_of(None if stored is None else _integer(stored)),
    "concurrency_key": _optional_text,
    "ordering_key": _optional_text,
}


def job_params(job: Job) -> dict[str, Any]:
    """Every column of ``job`` as a named parameter (``insert_job.sql``)."""
    params = write_params(job)
    params.update(
        kind=job.kind,
        queue=job.queue,
        args=dump_json(job.args),
        priority=job.priority,
        max_attempts=job.max_attempts,
        created_at=micros(job.created_at),
        tags=dump_json(job.tags),
        unique_key=job.unique_key,
        unique_states=unique_states_mask(job.unique_states) if job.unique_key is not None else None,
        concurrency_key=job.concurrency_key,
        ordering_key=job.ordering_key,
    )
    return params


def write_params(job: Job) -> dict[str, Any]:
    """The columns a decision may change, as named parameters (``write_job.sql``)."""
    return {
        "id": job.id,
        "state": job.state.value,
        "attempt": job.attempt,
        "run_lease": job.run_lease,
        "run_at": micros(job.run_at),
        "metadata": dump_json(job.metadata),
        "errors": _errors_json(job.errors),
        "attempted_at": micros(job.attempted_at),
        "heartbeat_at": micros(job.heartbeat_at),
        "deadline_at": micros(job.deadline_at),
        "finalized_at": micros(job.finalized_at),
        "progress": None if job.progress is None else dump_json(job.progress),
        "callback_id": job.callback_id,
        "callback_timeout_at": micros(job.callback_timeout_at),
        "callback_result": None if job.callback_result is None else dump_json(job.callback_result),
    }


def dlq_entry_from_row(row: Sequence[Any]) -> DlqEntry:
    """The job columns, then ``dlq_reason`` and ``dlq_at``."""
    return DlqEntry(
        job=job_from_row(row),
        reason=row[JOB_WIDTH],
        dlq_at=read_time(row[JOB_WIDTH + 1]) or INSTANT_MIN,  # NOT NULL: never None
    )


def read_time(stored: Any) -> datetime | None:
    """A time outside the job's columns (``dlq_at``, the oldest ``run_at`` of a count), the
    nearest readable one when it cannot be read: a count never stops for one row."""
    try:
        return _time(stored)
    except (TypeError, ValueError) as error:
        return time_placeholder(error)


def _loaded_object(text: str) -> dict[str, Any]:
    value = load_json(text)
    if type(value) is not dict:  # SQLite keeps any TEXT
        raise TypeError("args and metadata are JSON objects")
    return value


#: how the stored TEXT and INTEGER values are read
STORED = StoredValues(
    time=time_of,
    obj=_loaded_object,
    json=load_json,
    tags=lambda text: _tags(text) if text != "[]" else (),
    errors=_errors_of,
    text=lambda stored: None if stored is None else str(stored),
    misread=(KeyError, TypeError, ValueError, OverflowError, AttributeError),
    decoders=JOB_DECODERS,
    read_time=read_time,
)


def schedule_from_row(row: Sequence[Any]) -> ScheduleRecord:
    """A schedule row, in ``SCHEDULE_COLUMNS`` order."""
    return schedule_of(row, STORED)


def schedule_params(record: ScheduleRecord) -> dict[str, Any]:
    """Every column of a schedule as a named parameter (``upsert_schedule.sql``)."""
    job = record.schedule.job
    options = unique_options(job.unique)
    return {
        "name": record.name,
        "cron": record.schedule.cron,
        "timezone": record.schedule.timezone,
        "missed_fire_policy": record.schedule.missed_fire_policy,
        "kind": job.kind,
        "queue": job.queue,
        "args": dump_json(job.args),
        "priority": job.priority,
        "max_attempts": job.max_attempts,
        "tags": dump_json(list(job.tags)),
        "metadata": dump_json(job.metadata),
        "unique_options": None if options is None else dump_json(options),
        "paused": int(record.paused),
        "next_fire_at": micros(record.next_fire_at),
        "last_fire_at": micros(record.last_fire_at),
        "created_at": micros(record.created_at),
        "updated_at": micros(record.updated_at),
        "concurrency_key": job.concurrency_key,
        "ordering_key": job.ordering_key,
    }
