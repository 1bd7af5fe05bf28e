"""Job summaries on SQLite (``ClaimStore.list_job_summaries``): the statement of each home and
its rows as ``JobSummary`` values. The statements (``list_job_summaries.sql``,
``list_dlq_summaries.sql``) select ``SUMMARY_COLUMNS`` only, never args or the error history.
The rows are read as PostgreSQL's are (``awa.adapters._summaries.read_summaries``), from the
TEXT and INTEGER values SQLite stores."""

from __future__ import annotations

import sqlite3

from awa.adapters._summaries import STATEMENTS, SUMMARY_COLUMNS, read_summaries, summary_params
from awa.adapters.sqlite._rows import STORED
from awa.ports.listing import JobSummary

__all__ = ["STATEMENTS", "SUMMARY_COLUMNS", "summaries_of", "summary_params"]


def summaries_of(cursor: sqlite3.Cursor) -> list[JobSummary]:
    """The summaries in ``cursor``'s rows, once its columns are known to be
    ``SUMMARY_COLUMNS``: a statement that lists them otherwise fails here, by name."""
    names = (column[0] for column in cursor.description or ())
    return read_summaries(names, cursor.fetchall, STORED)
