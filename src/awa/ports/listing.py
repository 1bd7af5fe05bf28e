"""What a listing of jobs shows of each: ``JobSummary``, the few fields a table of jobs lists
(the dashboard's ``/jobs`` and ``/dlq``), without the job's args, metadata, progress, callback
result or error history, so that a page of jobs costs the same whatever the jobs carry.

``ClaimStore.list_job_summaries`` returns them from either home of a job: the jobs
(``home="jobs"``, what ``list_jobs`` lists) or the dead-letter queue (``home="dlq"``, what
``list_dlq`` lists). Of the error history a summary keeps the last error's text, cut to
``LAST_ERROR_CHARS_MAX`` characters.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import attrs

from awa.domain import DlqEntry, Job, JobState, Unreadable

__all__ = [
    "HOMES",
    "LAST_ERROR_CHARS_MAX",
    "SUMMARY_FIELDS",
    "Home",
    "JobSummary",
    "cut_error",
    "summarize",
]

#: where a job lives: among the jobs, or in the dead-letter queue (exactly one of them)
Home = Literal["jobs", "dlq"]
HOMES: tuple[Home, ...] = ("jobs", "dlq")
#: the characters of a job's last error a summary keeps; a longer one is cut and ends in "…"
LAST_ERROR_CHARS_MAX = 500


@attrs.frozen(kw_only=True)
class JobSummary:
    """A job as a listing shows it. ``last_error``: the text of the last error it recorded, at
    most ``LAST_ERROR_CHARS_MAX`` characters (``None``: no error yet); ``dlq_reason`` and
    ``dlq_at`` for a dead-lettered job (``None`` among the jobs)."""

    id: int
    kind: str
    queue: str
    state: JobState
    priority: int
    attempt: int
    max_attempts: int
    run_lease: int
    run_at: datetime
    created_at: datetime
    finalized_at: datetime | None
    tags: tuple[str, ...]
    last_error: str | None
    dlq_reason: str | None = None
    dlq_at: datetime | None = None
    #: the listed columns a store could not read back (``Job.unreadable``)
    unreadable: tuple[Unreadable, ...] = ()


#: the fields of a summary, in the order the stores' statements select them
SUMMARY_FIELDS = tuple(f.name for f in attrs.fields(JobSummary) if f.name != "unreadable")


def cut_error(text: str | None) -> str | None:
    """An error's text as a summary keeps it: longer than ``LAST_ERROR_CHARS_MAX``, its start
    and an ellipsis. A text already cut is left as it is."""
    if text is None or len(text) <= LAST_ERROR_CHARS_MAX:
        return text
    return text[: LAST_ERROR_CHARS_MAX - 1] + "…"


def summarize(job: Job, entry: DlqEntry | None = None) -> JobSummary:
    """The summary of ``job`` (of the dead-letter ``entry`` holding it, when given)."""
    return JobSummary(
        id=job.id,
        kind=job.kind,
        queue=job.queue,
        state=job.state,
        priority=job.priority,
        attempt=job.attempt,
        max_attempts=job.max_attempts,
        run_lease=job.run_lease,
        run_at=job.run_at,
        created_at=job.created_at,
        finalized_at=job.finalized_at,
        tags=job.tags,
        last_error=cut_error(job.errors[-1].error) if job.errors else None,
        dlq_reason=entry.reason if entry is not None else None,
        dlq_at=entry.dlq_at if entry is not None else None,
        unreadable=tuple(u for u in job.unreadable if u.column in SUMMARY_FIELDS),
    )
