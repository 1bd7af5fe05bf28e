"""Job summaries on PostgreSQL (``ClaimStore.list_job_summaries``): the statement of each home
and its rows as ``JobSummary`` values. The statements (``list_job_summaries.sql``,
``list_dlq_summaries.sql``) select ``SUMMARY_COLUMNS`` only, never args or the error history,
so the server does not even read those values' TOAST."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import Cursor

from awa.adapters._summaries import STATEMENTS, SUMMARY_COLUMNS, summary_decoders, summary_params
from awa.adapters._unreadable import read_fields
from awa.adapters.postgres._job_rows import _STATES, JOB_DECODERS, read_time, utc
from awa.adapters.postgres._rereading import fetch_rows
from awa.ports.listing import JobSummary

__all__ = ["STATEMENTS", "SUMMARY_COLUMNS", "summaries_of", "summary_params"]

_DECODERS = summary_decoders(JOB_DECODERS, read_time)


def summaries_of(cursor: Cursor[Any]) -> list[JobSummary]:
    """The summaries in ``cursor``'s rows, once its columns are known to be
    ``SUMMARY_COLUMNS``: a statement that lists them otherwise fails here, by name."""
    names = tuple(column.name for column in cursor.description or ())
    if names != SUMMARY_COLUMNS:
        raise AssertionError(f"expected the summary columns, got {list(names)}")
    return [_summary(row) for row in fetch_rows(cursor)]


def _summary(row: Sequence[Any]) -> JobSummary:
    """The summary in ``row``; one holding a value this version cannot read is read column
    by column (``awa.adapters._unreadable``), as a job is."""
    if type(row) is tuple:  # as the driver loaded it, every value read: the fast way first
        try:
            return _loaded_summary(row)
        except (KeyError, TypeError, ValueError, AttributeError):
            pass
    fields, found = read_fields(SUMMARY_COLUMNS, row, _DECODERS)
    return JobSummary(**fields, unreadable=found)


def _loaded_summary(row: Sequence[Any]) -> JobSummary:
    (
        id_, kind, queue, state, priority, attempt, max_attempts, run_lease, run_at, created_at,
        finalized_at, tags, last_error, dlq_reason, dlq_at,
    ) = row  # fmt: skip
    return JobSummary(
        id=id_,
        kind=kind,
        queue=queue,
        state=_STATES[state],
        priority=priority,
        attempt=attempt,
        max_attempts=max_attempts,
        run_lease=run_lease,
        run_at=utc(run_at),
        created_at=utc(created_at),
        finalized_at=utc(finalized_at),
        tags=tuple(tags),
        last_error=last_error,
        dlq_reason=dlq_reason,
        dlq_at=utc(dlq_at),
    )
