"""Reading jobs from rows: every job statement returns the job columns in one order
(``JOB_COLUMNS``), so one converter serves them all.

Rows are read the fast way (psycopg's loaders, then ``awa.adapters._sql_rows.job_of``'s one
tuple unpacking, which SQLite's rows share). A row holding a value this version cannot read
(``awa.adapters._unreadable``) is read again column by column: psycopg's fetch is repeated with
loaders that never raise (``_rereading``), and the row becomes a job whose ``unreadable`` names
each such column.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, overload

from awa.adapters._sql_rows import (
    JOB_COLUMNS,
    STATES,
    StoredValues,
    read_job_row,
    states_of,
)
from awa.adapters._unreadable import Decoders, Raw, TooEarly, TooLate, read_job, time_placeholder
from awa.adapters.postgres._rereading import fetch_rows, fetch_rows_async
from awa.domain import DlqEntry, ErrorEntry, Job
from awa.domain.validation import INSTANT_MIN

__all__ = [
    "ATTEMPT_COLUMNS",
    "JOB_COLUMNS",
    "JOB_DECODERS",
    "LOADED",
    "checked_attempt_rows",
    "checked_rows",
    "checked_rows_async",
    "dlq_entry_from_row",
    "job_after_attempt",
    "job_from_json",
    "job_from_row",
    "json_time",
    "read_json_time",
    "read_time",
    "utc",
]

_WIDTH = len(JOB_COLUMNS)
#: the columns a write may change while a lease holds (``write_jobs.sql`` writes exactly these);
#: the others are set by insert and claim only, so a worker's claimed job still has them right
ATTEMPT_COLUMNS = (
    "id",
    "state",
    "attempt",
    "run_at",
    "errors",
    "metadata",
    "progress",
    "attempted_at",
    "heartbeat_at",
    "deadline_at",
    "finalized_at",
    "callback_id",
    "callback_timeout_at",
    "callback_result",
)
_TIMESTAMP_COLUMNS = frozenset(column for column in JOB_COLUMNS if column.endswith("_at"))
# PostgreSQL's JSON timestamps drop trailing zeros of the fraction ("12:00:00.5+00:00");
# Python 3.10's fromisoformat reads only 3 or 6 digits
_FRACTION = re.compile(r"\.(\d{1,6})(?=[+-]|Z|$)")
_JOB_COLUMN_NAMES = tuple(column.encode() for column in JOB_COLUMNS)
_UTC = timezone.utc


@overload
def utc(when: datetime) -> datetime: ...
@overload
def utc(when: None) -> None: ...
def utc(when: datetime | None) -> datetime | None:
    """Timestamps leave the adapter in UTC whatever the session time zone."""
    if when is None or when.tzinfo is _UTC:
        return when
    return when.astimezone(_UTC)


def _loaded_errors(errors: list[dict[str, Any]] | None) -> tuple[ErrorEntry, ...]:
    return tuple(_error_from_json(e) for e in errors) if errors else ()


def _error_from_json(entry: dict[str, Any]) -> ErrorEntry:
    return ErrorEntry(
        error=entry["error"],
        attempt=entry["attempt"],
        at=datetime.fromisoformat(entry["at"]),
        terminal=entry.get("terminal", False),
        traceback=entry.get("traceback"),
    )


def job_from_row(row: Sequence[Any], offset: int = 0) -> Job:
    """The job in ``row[offset:offset + len(JOB_COLUMNS)]``; a row holding a value this
    version cannot read is read column by column instead (``awa.adapters._unreadable``)."""
    return read_job_row(row, offset, LOADED)


def job_after_attempt(claimed: Job, row: Sequence[Any]) -> Job:
    """The job whose ``ATTEMPT_COLUMNS`` are ``row``, its other columns those of ``claimed``,
    the same job as claimed under the same lease."""
    assert row[0] == claimed.id, "a claimed job was matched with another job's row"
    if type(row) is tuple:
        try:
            return _loaded_attempt(claimed, row)
        except LOADED.misread:
            pass
    return read_job(ATTEMPT_COLUMNS, row, JOB_DECODERS, base=claimed)


def _loaded_attempt(claimed: Job, row: Sequence[Any]) -> Job:
    (
        id_,
        state,
        attempt,
        run_at,
        errors,
        metadata,
        progress,
        attempted_at,
        heartbeat_at,
        deadline_at,
        finalized_at,
        callback_id,
        callback_timeout_at,
        callback_result,
    ) = row
    return Job(
        id=id_,
        kind=claimed.kind,
        queue=claimed.queue,
        args=claimed.args,
        state=STATES[state],
        priority=claimed.priority,
        attempt=attempt,
        max_attempts=claimed.max_attempts,
        run_lease=claimed.run_lease,
        run_at=utc(run_at),
        created_at=claimed.created_at,
        tags=claimed.tags,
        metadata=metadata,
        errors=_loaded_errors(errors),
        attempted_at=utc(attempted_at),
        heartbeat_at=utc(heartbeat_at),
        deadline_at=utc(deadline_at),
        finalized_at=utc(finalized_at),
        progress=progress,
        callback_id=callback_id,
        callback_timeout_at=utc(callback_timeout_at),
        callback_result=callback_result,
        unique_key=claimed.unique_key,
        unique_states=claimed.unique_states,
        concurrency_key=claimed.concurrency_key,
        ordering_key=claimed.ordering_key,
    )


_ATTEMPT_COLUMN_NAMES = tuple(column.encode() for column in ATTEMPT_COLUMNS)


def _check_job_columns(
    cur: Any, offset: int, expected: tuple[bytes, ...] = _JOB_COLUMN_NAMES
) -> None:
    # the result's own field names (libpq's PQfname): cur.description would build a Column
    # object per field, about 100 us a statement on the hot path
    result = cur.pgresult
    fields = result.nfields if result is not None else 0
    end = min(fields, offset + len(expected))
    fname = result.fname if result is not None else None
    names = [fname(i) for i in range(offset, end)] if fname is not None else []
    if end - offset != len(expected) or tuple(names) != expected:
        shown = [name.decode() if isinstance(name, bytes) else name for name in names]
        raise AssertionError(f"expected the job columns from column {offset}, got {shown}")


def checked_attempt_rows(cur: Any) -> list[Any]:
    """``checked_rows`` for a result of ``ATTEMPT_COLUMNS``."""
    _check_job_columns(cur, 0, _ATTEMPT_COLUMN_NAMES)
    return fetch_rows(cur)


def checked_rows(cur: Any, offset: int = 0) -> list[Any]:
    """Every row of ``cur``'s result, once its columns from ``offset`` on are known to be the
    job's, in ``JOB_COLUMNS`` order: a statement that lists them differently fails here, by
    name, instead of filling a job's fields from the wrong columns."""
    _check_job_columns(cur, offset)
    return fetch_rows(cur)


async def checked_rows_async(cur: Any, offset: int = 0) -> list[Any]:
    """``checked_rows`` for an async cursor."""
    _check_job_columns(cur, offset)
    return await fetch_rows_async(cur)


def json_time(text: str | None) -> datetime | None:
    """A ``timestamptz`` that travelled as JSON text (``to_json``), in UTC; a time outside
    the range Python reads (``'0001-12-31T10:00:00+00:00 BC'``, a five-digit year,
    ``infinity``) raises ``TooEarly`` or ``TooLate``."""
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(_FRACTION.sub(lambda m: "." + m[1].ljust(6, "0"), text))
    except ValueError:
        raise _out_of_range(text) from None
    return utc(when)


def read_json_time(text: str | None) -> datetime | None:
    """``json_time``, with a time outside the readable range taken as the nearest end of it:
    for times a count or a summary reads, which must never stop for one row."""
    try:
        return json_time(text)
    except ValueError as error:
        return time_placeholder(error)


def job_from_json(text: str) -> Job:
    """The job in one row of ``insert_jobs_portable.sql``: the job's columns as JSON text,
    read here rather than by the caller's driver, whose loaders may be anyone's."""
    data = json.loads(text)
    return job_from_row(tuple(_json_value(column, data[column]) for column in JOB_COLUMNS))


def _json_value(column: str, value: Any) -> Any:
    if column not in _TIMESTAMP_COLUMNS:
        return value
    try:
        return json_time(value)
    except ValueError as error:
        return Raw(value, str(error))  # read with the rest of the row by job_from_row


def dlq_entry_from_row(row: Sequence[Any]) -> DlqEntry:
    """A ``list_dlq.sql`` row: the job columns, then ``dlq_reason`` and ``dlq_at``."""
    return DlqEntry(
        job=job_from_row(row),
        reason=row[_WIDTH],
        dlq_at=read_time(row[_WIDTH + 1]) or INSTANT_MIN,  # NOT NULL: never None
    )


# -- column by column: a row the fast way could not read -------------------------------------


def _out_of_range(text: str) -> ValueError:
    """A stored time Python cannot hold, as PostgreSQL writes it: before year 1 (``BC``,
    ``-infinity``) or after 9999 (a five-digit year, ``infinity``)."""
    if text.endswith(" BC") or text.startswith("-"):
        return TooEarly(text)
    if text[:1].isdigit() or text == "infinity":
        return TooLate(text)
    return ValueError(f"not a time: {text!r}")


def _time(value: Any) -> datetime | None:
    if isinstance(value, Raw):
        raise _out_of_range(value.text)
    if value is not None and not isinstance(value, datetime):
        raise TypeError(f"not a time: {type(value).__name__}")
    return utc(value)


def read_time(value: Any) -> datetime | None:
    """A time column of a row outside the job's columns (``dlq_at``, the oldest ``run_at`` of
    a count), the nearest readable time when it cannot be read: a count never stops for one
    row."""
    try:
        return _time(value)
    except (TypeError, ValueError) as error:
        return time_placeholder(error)


def _loaded(value: Any) -> Any:
    if isinstance(value, Raw):
        raise ValueError(f"not JSON this version reads: {value.reason}")
    return value


def _object(value: Any) -> dict[str, Any]:
    if not isinstance(_loaded(value), dict):
        raise TypeError(f"not a JSON object but a {type(value).__name__}")
    return value  # type: ignore[no-any-return]


def _progress(value: Any) -> dict[str, Any] | None:
    return None if value is None else _object(value)


def _tags(value: Any) -> tuple[str, ...]:
    if not isinstance(_loaded(value), list) or not all(isinstance(t, str) for t in value):
        raise TypeError("not a list of strings")
    return tuple(value)


def _errors(value: Any) -> tuple[ErrorEntry, ...]:
    if not isinstance(_loaded(value), list):
        raise TypeError("not a list of error entries")
    return tuple(_error_from_json(entry) for entry in value)


def _same(value: Any) -> Any:
    return value


#: how each job column is read when a row is read column by column
JOB_DECODERS: Decoders = {
    "id": _same,
    "kind": _same,
    "queue": _same,
    "args": _object,
    "state": STATES.__getitem__,
    "priority": _same,
    "attempt": _same,
    "max_attempts": _same,
    "run_lease": _same,
    "run_at": _time,
    "created_at": _time,
    "tags": _tags,
    "metadata": _object,
    "errors": _errors,
    "attempted_at": _time,
    "heartbeat_at": _time,
    "deadline_at": _time,
    "finalized_at": _time,
    "progress": _progress,
    "callback_id": _same,
    "callback_timeout_at": _time,
    "callback_result": _loaded,
    "unique_key": _same,
    "unique_states": states_of,
    "concurrency_key": _same,
    "ordering_key": _same,
}
#: how the driver's values are read: the fast way, psycopg has loaded the JSON already
LOADED = StoredValues(
    time=utc,
    obj=_same,
    json=_same,
    tags=tuple,
    errors=_loaded_errors,
    text=_same,
    misread=(KeyError, TypeError, ValueError, AttributeError),
    decoders=JOB_DECODERS,
    read_time=read_time,
)
