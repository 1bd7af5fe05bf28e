"""What the SQL stores share of the job listings: the parameters of ``list_jobs`` and
``list_job_summaries``, the summary statement of each home, how a row of ``SUMMARY_COLUMNS``
becomes a ``JobSummary`` the fast way (``summary_of``, with the store's ``StoredValues``) and how
a summary's own columns are read when a row is read column by column."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from awa.adapters._sql_rows import STATES, StoredValues
from awa.adapters._unreadable import Decoders, read_fields
from awa.adapters.core import JobQuery
from awa.ports.listing import SUMMARY_FIELDS, Home, JobSummary

__all__ = [
    "STATEMENTS",
    "SUMMARY_COLUMNS",
    "list_params",
    "read_summaries",
    "summary_decoders",
    "summary_of",
    "summary_params",
]

#: the columns both stores' statements select, in ``JobSummary``'s order
SUMMARY_COLUMNS = SUMMARY_FIELDS
#: the statement listing each home
STATEMENTS: dict[Home, str] = {"jobs": "list_job_summaries", "dlq": "list_dlq_summaries"}


def list_params(query: JobQuery) -> dict[str, Any]:
    """The parameters of ``list_jobs.sql`` (and of the summary statements, with theirs)."""
    return {
        "state": query.state.value if query.state is not None else None,
        "kind": query.kind,
        "queue": query.queue,
        "tag": query.tag,
        "before_id": query.before_id,
        "limit": query.limit,
    }


def summary_params(query: JobQuery, error_chars: int) -> dict[str, Any]:
    return {**list_params(query), "error_chars": error_chars}


def _optional_text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"not text but a {type(value).__name__}")
    return value


def summary_decoders(job_decoders: Decoders, read_time: Callable[[Any], Any]) -> Decoders:
    """A store's job decoders, with those of the columns only a summary has."""
    return {
        **job_decoders,
        "last_error": _optional_text,
        "dlq_reason": _optional_text,
        "dlq_at": read_time,
    }


def read_summaries(
    names: Iterable[str], fetch: Callable[[], Iterable[Sequence[Any]]], stored: StoredValues
) -> list[JobSummary]:
    """The summaries in a result whose columns are ``names``, once they are known to be
    ``SUMMARY_COLUMNS`` (a statement that lists them otherwise fails here, by name), its rows
    then ``fetch``ed. A row holding a value this version cannot read is read column by column
    (``awa.adapters._unreadable``), as a job is."""
    names = tuple(names)
    if names != SUMMARY_COLUMNS:
        raise AssertionError(f"expected the summary columns, got {list(names)}")
    decoders = summary_decoders(stored.decoders, stored.read_time)
    return [_summary(row, stored, decoders) for row in fetch()]


def _summary(row: Sequence[Any], stored: StoredValues, decoders: Decoders) -> JobSummary:
    if type(row) is tuple:  # as the driver loaded it, every value read: the fast way first
        try:
            return summary_of(row, stored)
        except stored.misread:
            pass
    fields, found = read_fields(SUMMARY_COLUMNS, row, decoders)
    return JobSummary(**fields, unreadable=found)


def summary_of(values: Sequence[Any], stored: StoredValues) -> JobSummary:
    """The summary in ``values``, one per ``SUMMARY_COLUMNS``, as the store keeps them."""
    (
        id_, kind, queue, state, priority, attempt, max_attempts, run_lease, run_at, created_at,
        finalized_at, tags, last_error, dlq_reason, dlq_at,
    ) = values  # fmt: skip
    time = stored.time
    return JobSummary(
        id=id_,
        kind=kind,
        queue=queue,
        state=STATES[state],
        priority=priority,
        attempt=attempt,
        max_attempts=max_attempts,
        run_lease=run_lease,
        run_at=time(run_at),
        created_at=time(created_at),
        finalized_at=time(finalized_at),
        tags=stored.tags(tags),
        last_error=stored.text(last_error),
        dlq_reason=dlq_reason,
        dlq_at=time(dlq_at),
    )
