"""What the operator verbs did and what they hold, in the words both front ends use.

The CLI prints these lines and the dashboard flashes them, so an operator reads the same
sentence for the same act wherever they did it. Plain strings: the printers that escape them
for a terminal or a page are the front ends' (``awa.escaping``).
"""

from __future__ import annotations

from datetime import datetime, timezone

from awa.domain import Job, JobState, ScheduleRecord
from awa.domain.flow import RateLimit
from awa.ports import QueueSettings, QueueStats

__all__ = [
    "attempts",
    "filter_text",
    "flow_column",
    "flow_limits_text",
    "human_duration",
    "job_result",
    "last_error",
    "paused_text",
    "purged_text",
    "rate_text",
    "removed_text",
    "resumed_text",
    "retried_text",
    "stored",
    "switched",
    "triggered_text",
    "when",
]


# -- values as a table cell shows them ------------------------------------------------------


def when(moment: datetime | None) -> str:
    """A timestamp for a table: UTC, to the second."""
    if moment is None:
        return "-"
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def human_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = max(seconds, 0.0)
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}".removesuffix(".0") + "h"
    return f"{seconds / 86400:.1f}".removesuffix(".0") + "d"


def stored(job: Job, column: str, shown: str) -> str:
    """``shown`` (a column of ``job`` as a table shows it), or, when its store could not read
    that column back (``Job.unreadable``), what it holds and why it cannot be read."""
    for found in job.unreadable:
        if found.column == column:
            return f"{found.raw} (as stored: {found.reason})"
    return shown


def attempts(job: Job) -> str:
    return f"{job.attempt}/{job.max_attempts}"


def last_error(job: Job) -> str:
    """The first line of the job's latest error, cut to fit a table cell."""
    if not job.errors:
        return "-"
    line = job.errors[-1].error.strip().splitlines()[0] if job.errors[-1].error.strip() else ""
    return line if len(line) <= 80 else line[:77] + "..."


def filter_text(queue: str | None, kind: str | None) -> str:
    parts = ([f"queue={queue}"] if queue else []) + ([f"kind={kind}"] if kind else [])
    return ", ".join(parts) or "every queue and kind"


# -- what a verb did -------------------------------------------------------------------------


def job_result(verb: str, job: Job) -> str:
    """One line naming the job, what was done to it and where that left it."""
    runs = f" until {when(job.run_at)}" if job.state is JobState.SCHEDULED else ""
    return (
        f"job {job.id} ({job.kind} on {job.queue}) {verb}; state {job.state.value}{runs},"
        f" attempt {attempts(job)}, run_lease {job.run_lease}"
    )


def switched(queue: str, paused: bool) -> str:
    """What pausing or resuming ``queue`` did, in one line."""
    if paused:
        return f"queue {queue} paused: no new claims (running attempts, inserts and rescue go on)"
    return f"queue {queue} resumed: workers claim from it again"


def retried_text(count: int, queue: str | None, kind: str | None) -> str:
    return (
        f"retried {count} dead-letter job(s) ({filter_text(queue, kind)}) with a fresh attempt"
        " budget"
    )


def purged_text(count: int, queue: str | None, kind: str | None) -> str:
    entries = "entry" if count == 1 else "entries"
    return f"purged {count} dead-letter {entries} ({filter_text(queue, kind)})"


def paused_text(record: ScheduleRecord) -> str:
    return f"schedule {record.name} paused: no process fires it until it is resumed"


def resumed_text(record: ScheduleRecord) -> str:
    return f"schedule {record.name} resumed; next fire {when(record.next_fire_at)}"


def triggered_text(name: str) -> str:
    return f"inserted for schedule {name}"


def removed_text(name: str) -> str:
    return (
        f"schedule {name} removed (a process that declares it adds it back when it starts;"
        " remove it from the code too)"
    )


def rate_text(rate: RateLimit) -> str:
    return f"{rate.per_second:g}/s, burst {rate.burst}"


def flow_limits_text(settings: QueueSettings) -> str:
    """A queue's fleet-wide limits in a sentence (``awa queue config``, the dashboard)."""
    concurrency = (
        "no concurrency limit"
        if settings.concurrency_limit is None
        else f"at most {settings.concurrency_limit} live at once"
    )
    rate = "no rate limit" if settings.rate_limit is None else rate_text(settings.rate_limit)
    per_key = []
    if settings.key_concurrency_limit is not None:
        per_key.append(f"at most {settings.key_concurrency_limit} live at once")
    if settings.key_rate_limit is not None:
        per_key.append(rate_text(settings.key_rate_limit))
    keys = f"; per concurrency key {', '.join(per_key)}" if per_key else ""
    return f"{concurrency}, {rate}{keys}"


def flow_column(stats: QueueStats) -> str:
    """Live attempts against the concurrency limit, the rate, and the per-key limits:
    ``3/5, 200/s, burst 50, key 2, key 1/s, burst 3``; ``-`` for a queue with no limit."""
    parts = []
    if stats.concurrency_limit is not None:
        parts.append(f"{stats.live}/{stats.concurrency_limit}")
    if stats.rate_limit is not None:
        parts.append(rate_text(stats.rate_limit))
    if stats.key_concurrency_limit is not None:
        parts.append(f"key {stats.key_concurrency_limit}")
    if stats.key_rate_limit is not None:
        parts.append(f"key {rate_text(stats.key_rate_limit)}")
    return ", ".join(parts) or "-"
