"""What the pages show, worked out from domain values: pure functions, no I/O, no markup.

The words are the domain's and the CLI's: an attempt's end is its row of the poison-job table
(``awa.domain.AttemptEnd``), a repeating failure gets the CLI's diagnosis
(``awa.operations.diagnosis``), a dead letter its reason. The templates only lay them out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from awa.domain import (
    TERMINAL_STATES,
    AttemptEnd,
    DlqEntry,
    ErrorEntry,
    Job,
    JobState,
    Unreadable,
    ValidationError,
    attempt_ends,
)
from awa.domain.validation import check_queue
from awa.escaping import printable
from awa.operations.diagnosis import error_rounds
from awa.operations.wording import flow_column, human_duration, rate_text, when
from awa.ports import QueueStats, QueueSummary

__all__ = [
    "AttemptRow",
    "QueueRow",
    "Timeline",
    "age",
    "headline",
    "json_text",
    "limits_now",
    "queue_rows",
    "shown",
    "timeline",
    "unreadable",
    "when",
]

# DEL and the C1 controls, which JSON leaves alone, written as \u escapes (as the CLI does)
_JSON_ESCAPED = {code: f"\\u{code:04x}" for code in (0x7F, *range(0x80, 0xA0))}


def shown(text: object) -> str:
    """User text as it will be shown: control characters as ``\\xNN`` (newlines and tabs
    kept). The templates escape it for HTML on top."""
    return printable(str(text), lines=True)


def unreadable(item: Any, column: str) -> Unreadable | None:
    """The ``Unreadable`` of a job's (or summary's) ``column``: its stored text, which the
    page shows instead of the stand-in value the store read it as."""
    for found in getattr(item, "unreadable", ()):
        if found.column == column:
            return found  # type: ignore[no-any-return]
    return None


def json_text(value: Any) -> str:
    """A JSON value, indented, with every character that could hide (controls) escaped."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return text.translate(_JSON_ESCAPED)


def headline(text: str) -> str:
    """The first line of an error, as the CLI's tables show it."""
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else "(empty error)"


def age(moment: datetime | None, now: datetime) -> str:
    """``3m ago`` or ``in 4m``; ``-`` for no time."""
    if moment is None:
        return "-"
    seconds = (now - moment).total_seconds()
    if seconds >= 0:
        return f"{human_duration(seconds)} ago"
    return f"in {human_duration(-seconds)}"


# -- the queues page --------------------------------------------------------------------------


@attrs.frozen
class QueueRow:
    stats: QueueStats
    ended: Mapping[JobState, int]
    oldest_available_age_s: float | None

    @property
    def queue(self) -> str:
        return self.stats.queue

    def count(self, state: JobState) -> int:
        return self.stats.counts.get(state, 0)

    @property
    def total(self) -> int:
        return sum(self.stats.counts.values())

    @property
    def actionable(self) -> bool:
        """Whether the queue's name is one a queue can have, so that its actions' paths can
        name it: a row written by hand may hold any text (a ``/`` even), which no action could
        take and no path can carry."""
        try:
            check_queue(self.stats.queue)
        except ValidationError:
            return False
        return True

    @property
    def flow(self) -> str:
        """Live attempts against the concurrency limit and the other limits, as
        ``awa queue stats`` shows them; ``-`` for an unlimited queue."""
        return flow_column(self.stats)

    @property
    def waiting_for_slot(self) -> int:
        """The available jobs that wait for a slot: every one of them while the queue's live
        attempts are at or over its concurrency limit (as counted), none otherwise. Read from
        the counts the page has, so it costs no query of its own."""
        limit = self.stats.concurrency_limit
        if limit is None or self.stats.live < limit:
            return 0
        return self.count(JobState.AVAILABLE)


def queue_rows(
    stats: Sequence[QueueStats], ended: Mapping[str, Mapping[JobState, int]], now: datetime
) -> list[QueueRow]:
    rows = []
    for queue in stats:
        oldest = queue.oldest_available_at
        rows.append(
            QueueRow(
                queue,
                ended.get(queue.queue, {}),
                max((now - oldest).total_seconds(), 0.0) if oldest is not None else None,
            )
        )
    return rows


def limits_now(stats: QueueStats | None) -> dict[str, str] | None:
    """The four flow limits of a queue as its limits form shows them beside their fields;
    ``None`` when the counts do not have the queue (new, or not counted yet)."""
    if stats is None:
        return None

    def limit(value: int | None) -> str:
        return "none" if value is None else str(value)

    return {
        "concurrency_limit": limit(stats.concurrency_limit)
        + ("" if stats.concurrency_limit is None else f" ({stats.live} live)"),
        "rate_limit": "none" if stats.rate_limit is None else rate_text(stats.rate_limit),
        "key_concurrency_limit": limit(stats.key_concurrency_limit),
        "key_rate_limit": "none"
        if stats.key_rate_limit is None
        else rate_text(stats.key_rate_limit),
    }


def summary_age_s(summary: QueueSummary | None, now: datetime) -> float | None:
    return None if summary is None else max((now - summary.counted_at).total_seconds(), 0.0)


# -- one job's attempts -----------------------------------------------------------------------


@attrs.frozen
class AttemptRow:
    """One attempt that left an entry in the error history."""

    round: int
    entry: ErrorEntry
    end: AttemptEnd

    @property
    def headline(self) -> str:
        return headline(self.entry.error)

    @property
    def has_more(self) -> bool:
        return self.entry.error.strip() != self.headline or bool(self.entry.traceback)


@attrs.frozen
class Timeline:
    """A job's attempts in order, then where the job is now."""

    rows: tuple[AttemptRow, ...]
    #: the attempt running (or parked on a callback) now, if any
    live_attempt: int | None
    #: how the job ended, in the CLI's and the table's words; ``None`` while it is not over
    outcome: str | None
    rounds: int
    #: the attempt the job waits to run, if it waits; and its round, when a retry reset the
    #: attempt count since the last error (a new round begins with it)
    next_attempt: int | None = None
    next_round: int | None = None


def timeline(job: Job, dead: DlqEntry | None) -> Timeline:
    rounds = error_rounds(job.errors)
    ends = attempt_ends(job)
    rows = tuple(
        AttemptRow(r, entry, end) for r, entry, end in zip(rounds, job.errors, ends, strict=True)
    )
    live = job.attempt if job.state.is_live else None
    last_round = max(rounds, default=1)
    waiting = job.state in (JobState.SCHEDULED, JobState.AVAILABLE, JobState.RETRYABLE)
    new_round = waiting and job.errors and job.attempt < job.errors[-1].attempt
    return Timeline(
        rows,
        live,
        _outcome(job, dead, ends),
        last_round,
        next_attempt=job.attempt + 1 if waiting else None,
        next_round=last_round + 1 if new_round else None,
    )


def _outcome(job: Job, dead: DlqEntry | None, ends: list[AttemptEnd]) -> str | None:
    if job.state not in TERMINAL_STATES:
        return None
    at = when(job.finalized_at)
    if job.state is JobState.COMPLETED:
        return f"completed at {at}"
    if job.state is JobState.CANCELLED:
        by = "its handler" if ends and ends[-1] is AttemptEnd.CANCELLED else "an operator"
        return f"cancelled at {at} by {by}"
    spent = "attempts spent" if job.attempts_spent else "failed at once"
    if dead is not None:
        return f"failed at {at} ({spent}); in the dead-letter queue as {dead.reason}"
    return f"failed at {at} ({spent})"
