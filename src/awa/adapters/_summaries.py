"""What the SQL stores share of the job listings: the parameters of ``list_jobs`` and
``list_job_summaries``, the summary statement of each home, and how a summary's own columns
are read when a row is read column by column."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from awa.adapters._unreadable import Decoders
from awa.adapters.core import JobQuery
from awa.ports.listing import SUMMARY_FIELDS, Home

__all__ = ["STATEMENTS", "SUMMARY_COLUMNS", "list_params", "summary_decoders", "summary_params"]

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
