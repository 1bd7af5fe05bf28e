"""Job summaries on PostgreSQL (``ClaimStore.list_job_summaries``): the statement of each home
and its rows as ``JobSummary`` values. The statements (``list_job_summaries.sql``,
``list_dlq_summaries.sql``) select ``SUMMARY_COLUMNS`` only, never args or the error history,
so the server does not even read those values' TOAST. The rows are read as SQLite's are
(``awa.adapters._summaries.read_summaries``), from psycopg's loaded values."""

from __future__ import annotations

from functools import partial
from typing import Any

from psycopg import Cursor

from awa.adapters._summaries import STATEMENTS, SUMMARY_COLUMNS, read_summaries, summary_params
from awa.adapters.postgres._job_rows import LOADED
from awa.adapters.postgres._rereading import fetch_rows
from awa.ports.listing import JobSummary

__all__ = ["STATEMENTS", "SUMMARY_COLUMNS", "summaries_of", "summary_params"]


def summaries_of(cursor: Cursor[Any]) -> list[JobSummary]:
    """The summaries in ``cursor``'s rows, once its columns are known to be
    ``SUMMARY_COLUMNS``: a statement that lists them otherwise fails here, by name."""
    names = (column.name for column in cursor.description or ())
    return read_summaries(names, partial(fetch_rows, cursor), LOADED)
