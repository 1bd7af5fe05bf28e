"""The row boundary: domain values to bound parameters, and rows that are not jobs (schedules,
the queue summary) to domain values. Jobs are read from rows by ``_job_rows``, whose names are
also here, as the adapter's modules import them.

JSON travels as text and is cast to ``jsonb`` in SQL.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any

from awa.adapters._sql_rows import (
    SCHEDULE_COLUMNS,
    STATES,
    schedule_of,
    unique_options,
    unique_states_mask,
)
from awa.adapters.postgres._job_rows import (
    ATTEMPT_COLUMNS,
    JOB_COLUMNS,
    LOADED,
    checked_attempt_rows,
    checked_rows,
    checked_rows_async,
    dlq_entry_from_row,
    job_after_attempt,
    job_from_json,
    job_from_row,
    read_json_time,
    read_time,
    utc,
)
from awa.domain import (
    ErrorEntry,
    Job,
    NewJob,
    ScheduleRecord,
    ValidationError,
)
from awa.domain.flow import RateLimit
from awa.domain.validation import INSTANT_MIN, compact_json
from awa.ports.results import QueueSettings
from awa.ports.summary import DlqGroup, QueueSummary, StateGroup, build_summary

__all__ = [
    "ATTEMPT_COLUMNS",
    "JOB_COLUMNS",
    "SCHEDULE_COLUMNS",
    "checked_attempt_rows",
    "checked_rows",
    "checked_rows_async",
    "dlq_entry_from_row",
    "dump_json",
    "errors_to_json",
    "fast_json_loads",
    "interval",
    "job_after_attempt",
    "job_from_json",
    "job_from_row",
    "rate_of",
    "read_time",
    "restore_params",
    "schedule_from_row",
    "schedule_params",
    "settings_from_row",
    "stored_args",
    "stored_json",
    "summary_from_row",
    "unique_states_mask",
    "utc",
    "write_params",
]


def dump_json(value: Any) -> str:
    """JSON text for a ``jsonb`` parameter. A lone surrogate cannot be stored as UTF-8: that is
    the caller's input, so it is a ``ValidationError`` before any SQL runs."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"value cannot be stored as JSON: {exc}") from None
    except RecursionError:
        raise ValidationError("value is nested too deeply to be stored as JSON") from None
    if "e+" in text:  # rare: only then look for floats that jsonb would turn into integers
        text = _keep_large_floats(value, text)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"value contains a lone surrogate ({exc.object[exc.start : exc.end]!r}),"
            " which is not valid UTF-8 and cannot be stored"
        ) from None
    return text


def stored_args(job: NewJob) -> str:
    """The job's args as the JSON text to store, dumped once (``NewJob.args_json``, which the
    client's size check made): ``dump_json``'s text, whose float rule only then walks them."""
    return _stored(job.args, job.args_json())


def stored_json(value: dict[str, Any]) -> str:
    """``dump_json`` for a value a ``NewJob`` already checked (storable text, finite floats)."""
    return _stored(value, compact_json(value)) if value else "{}"


def _stored(value: Any, text: str) -> str:
    return _keep_large_floats(value, text) if "e+" in text else text


def _keep_large_floats(value: Any, text: str) -> str:
    """``1e+20`` is an integer to ``jsonb`` (``numeric`` keeps no exponent), so ``1e20`` would
    come back as ``100000000000000000000``, an ``int``. Written as ``100000000000000000000.0``
    it keeps its scale and comes back a ``float``. Such floats (``repr`` with an exponent
    ``e+``) are always whole numbers, so ``int(x)`` is exact."""
    positional: list[str] = []

    def mark(item: Any) -> Any:
        if isinstance(item, float):
            if "e+" not in repr(item):
                return item
            positional.append(f"{int(item)}.0")
            return f"\x00float{len(positional) - 1}"  # NUL: never in stored text
        if isinstance(item, dict):
            return {key: mark(inner) for key, inner in item.items()}
        if isinstance(item, (list, tuple)):
            return [mark(inner) for inner in item]
        return item

    marked = json.dumps(mark(value), ensure_ascii=False, separators=(",", ":"))
    if not positional:
        return text  # the "e+" was inside a string
    for index, number in enumerate(positional):
        marked = marked.replace(f'"\\u0000float{index}"', number, 1)
    return marked


# the C scanner ``json.loads`` ends in, called directly: PostgreSQL's JSON text is UTF-8 with
# no surrounding whitespace, so the encoding sniffing and whitespace skipping around it are
# a third of the cost of reading a job's args
_SCAN_JSON: Callable[[str, int], tuple[Any, int]]
_SCAN_JSON = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def fast_json_loads(data: str | bytes) -> Any:
    """``json.loads`` with a shortcut for the empty object and array most rows carry."""
    if data == b"{}":
        return {}
    if data == b"[]":
        return []
    text = data.decode() if isinstance(data, bytes) else data
    try:
        value, end = _SCAN_JSON(text, 0)
    except StopIteration:  # leading whitespace (a json, not jsonb, value): the long way
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def _json_or_null(value: Any) -> str | None:
    return None if value is None else dump_json(value)


def interval(seconds: float) -> timedelta | None:
    """A duration as a bound ``interval``; 0 means "none" (NULL)."""
    return timedelta(seconds=seconds) if seconds else None


def _error_to_json(error: ErrorEntry) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "error": error.error,
        "attempt": error.attempt,
        "at": error.at.isoformat(),
    }
    if error.terminal:
        entry["terminal"] = True
    if error.traceback is not None:
        entry["traceback"] = error.traceback
    return entry


def errors_to_json(errors: Iterable[ErrorEntry]) -> str:
    return dump_json([_error_to_json(e) for e in errors])


def write_params(jobs: Sequence[Job]) -> dict[str, Any]:
    """Parameters of ``write_jobs.sql``: every column a decision may change, except the lease."""
    return {
        "id": [j.id for j in jobs],
        "state": [j.state.value for j in jobs],
        "attempt": [j.attempt for j in jobs],
        "run_at": [j.run_at for j in jobs],
        "errors": [errors_to_json(j.errors) for j in jobs],
        "metadata": [dump_json(j.metadata) for j in jobs],
        "progress": [_json_or_null(j.progress) for j in jobs],
        "attempted_at": [j.attempted_at for j in jobs],
        "heartbeat_at": [j.heartbeat_at for j in jobs],
        "deadline_at": [j.deadline_at for j in jobs],
        "finalized_at": [j.finalized_at for j in jobs],
        "callback_timeout_at": [j.callback_timeout_at for j in jobs],
        "callback_id": [j.callback_id for j in jobs],
        "callback_result": [_json_or_null(j.callback_result) for j in jobs],
    }


def restore_params(jobs: Sequence[Job]) -> dict[str, Any]:
    """Parameters of ``restore_jobs.sql``: every column."""
    params = write_params(jobs)
    params.update(
        kind=[j.kind for j in jobs],
        queue=[j.queue for j in jobs],
        args=[dump_json(j.args) for j in jobs],
        priority=[j.priority for j in jobs],
        max_attempts=[j.max_attempts for j in jobs],
        run_lease=[j.run_lease for j in jobs],
        created_at=[j.created_at for j in jobs],
        tags=[dump_json(list(j.tags)) for j in jobs],
        unique_key=[j.unique_key for j in jobs],
        unique_states=[unique_states_mask(j.unique_states) for j in jobs],
        concurrency_key=[j.concurrency_key for j in jobs],
        ordering_key=[j.ordering_key for j in jobs],
    )
    return params


def schedule_from_row(row: Sequence[Any], offset: int = 0) -> ScheduleRecord:
    """The schedule in ``row[offset:]``, in ``SCHEDULE_COLUMNS`` order."""
    return schedule_of(row[offset : offset + len(SCHEDULE_COLUMNS)], LOADED)


def schedule_params(records: Sequence[ScheduleRecord]) -> dict[str, Any]:
    """Parameters of ``upsert_schedules.sql``: one array per column."""
    jobs = [r.schedule.job for r in records]
    return {
        "name": [r.name for r in records],
        "cron": [r.schedule.cron for r in records],
        "timezone": [r.schedule.timezone for r in records],
        "missed_fire_policy": [r.schedule.missed_fire_policy for r in records],
        "kind": [j.kind for j in jobs],
        "queue": [j.queue for j in jobs],
        "args": [dump_json(j.args) for j in jobs],
        "priority": [j.priority for j in jobs],
        "max_attempts": [j.max_attempts for j in jobs],
        "tags": [dump_json(list(j.tags)) for j in jobs],
        "metadata": [dump_json(j.metadata) for j in jobs],
        "unique_options": [_json_or_null(unique_options(j.unique)) for j in jobs],
        "paused": [r.paused for r in records],
        "next_fire_at": [r.next_fire_at for r in records],
        "last_fire_at": [r.last_fire_at for r in records],
        "created_at": [r.created_at for r in records],
        "updated_at": [r.updated_at for r in records],
        "concurrency_key": [j.concurrency_key for j in jobs],
        "ordering_key": [j.ordering_key for j in jobs],
    }


def summary_from_row(row: Sequence[Any]) -> QueueSummary:
    """``queue_summary.sql``'s row: the counted groups (JSON arrays) and the settings now."""
    counted_at, window_s, states, dead, settings = row
    return build_summary(
        utc(counted_at),
        float(window_s),
        # a sixth element, whether the count is an estimate, since migration 0011
        (
            StateGroup(queue, STATES[state], count, read_json_time(oldest), ended, *estimated)
            for queue, state, count, oldest, ended, *estimated in states
        ),
        (
            DlqGroup(queue, kind, reason, count, read_json_time(latest) or INSTANT_MIN, ended)
            for queue, kind, reason, count, latest, ended in dead
        ),
        (_summary_settings(*values) for values in settings),
    )


def _summary_settings(
    queue: str,
    paused: bool,
    dlq_enabled: bool,
    concurrency: int | None,
    per_second: float | None,
    burst: int | None,
    key_concurrency: int | None,
    key_per_second: float | None,
    key_burst: int | None,
) -> QueueSettings:
    """A queue's settings as ``queue_summary.sql`` gives them (no retentions: the summary
    does not show them)."""
    return QueueSettings(
        queue,
        paused,
        dlq_enabled,
        concurrency_limit=concurrency,
        rate_limit=rate_of(per_second, burst),
        key_concurrency_limit=key_concurrency,
        key_rate_limit=rate_of(key_per_second, key_burst),
    )


def settings_from_row(row: Sequence[Any]) -> QueueSettings:
    """``configure_queue.sql``'s row: the settings, retentions in seconds, then the flow limits:
    the queue's, then its keys' (each rate's per second and burst both NULL or both set, by the
    table's CHECKs)."""
    queue, paused, dlq_enabled, finished_s, dlq_s, failed_s, *flow = row
    concurrency, per_second, burst, key_concurrency, key_per_second, key_burst = flow
    return QueueSettings(
        queue,
        paused,
        dlq_enabled,
        finished_s,
        dlq_s,
        failed_s,
        concurrency,
        rate_of(per_second, burst),
        key_concurrency,
        rate_of(key_per_second, key_burst),
    )


def rate_of(per_second: float | None, burst: int | None) -> RateLimit | None:
    """A stored rate limit: its two columns, NULL together (the CHECKs) for none."""
    return None if per_second is None or burst is None else RateLimit(per_second, burst)
