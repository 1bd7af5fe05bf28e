"""Job summaries on SQLite (``ClaimStore.list_job_summaries``): the statement of each home and
its rows as ``JobSummary`` values. The statements (``list_job_summaries.sql``,
``list_dlq_summaries.sql``) select ``SUMMARY_COLUMNS`` only, never args or the error history."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from awa.adapters._summaries import STATEMENTS, SUMMARY_COLUMNS, summary_decoders, summary_params
from awa.adapters._unreadable import read_fields
from awa.adapters.sqlite._rows import JOB_DECODERS, STATES, read_time, time_of
from awa.ports.listing import JobSummary

__all__ = ["STATEMENTS", "SUMMARY_COLUMNS", "summaries_of", "summary_params"]

_DECODERS = summary_decoders(JOB_DECODERS, read_time)


def summaries_of(cursor: sqlite3.Cursor) -> list[JobSummary]:
    """The summaries in ``cursor``'s rows, once its columns are known to be
    ``SUMMARY_COLUMNS``: a statement that lists them otherwise fails here, by name."""
    names = tuple(column[0] for column in cursor.description or ())
    if names != SUMMARY_COLUMNS:
        raise AssertionError(f"expected the summary columns, got {list(names)}")
    return [_summary(row) for row in cursor.fetchall()]


def _summary(row: Sequence[Any]) -> JobSummary:
    """The summary in ``row``; one holding a value this version cannot read is read column
    by column (``awa.adapters._unreadable``), as a job is."""
    try:
        return _stored_summary(row)
    except (KeyError, TypeError, ValueError, OverflowError, AttributeError):
        fields, found = read_fields(SUMMARY_COLUMNS, row, _DECODERS)
        return JobSummary(**fields, unreadable=found)


def _stored_summary(row: Sequence[Any]) -> JobSummary:
    (
        id_, kind, queue, state, priority, attempt, max_attempts, run_lease, run_at, created_at,
        finalized_at, tags, last_error, dlq_reason, dlq_at,
    ) = row  # fmt: skip
    return JobSummary(
        id=id_,
        kind=kind,
        queue=queue,
        state=STATES[state],
        priority=priority,
        attempt=attempt,
        max_attempts=max_attempts,
        run_lease=run_lease,
        run_at=time_of(run_at),
        created_at=time_of(created_at),
        finalized_at=time_of(finalized_at),
        tags=tuple(json.loads(tags)) if tags != "[]" else (),
        last_error=None if last_error is None else str(last_error),
        dlq_reason=dlq_reason,
        dlq_at=time_of(dlq_at),
    )
