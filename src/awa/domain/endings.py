"""How each attempt of a job ended: the rows of the specification's poison-job table, as data.

Every way an attempt ends counts against ``max_attempts`` (``lifecycle.md``, "Poison jobs"), and
each attempt that ends without completing leaves one entry in the job's error history.
``attempt_ends`` reads a history back into the table's rows, so an operator's tool can say why
each attempt ended in the table's own words; the dead-letter reason a spent job gets follows
from the same row (``dlq_reason_after``).
"""

from __future__ import annotations

import enum

from awa.domain.defaults import HANDLER_PANICKED, RETRY_REQUESTED
from awa.domain.rescue import RescueCause
from awa.domain.states import JobState
from awa.domain.values import DlqReason, ErrorEntry, Job

__all__ = ["AttemptEnd", "attempt_end", "attempt_ends", "dlq_reason_after"]


class AttemptEnd(enum.Enum):
    """One row of the poison-job table (plus the two handler outcomes that also leave an error
    entry): the table's words, and the dead-letter reason once attempts are spent (``None``:
    never dead-lettered)."""

    RAISED = ("handler raises an exception", DlqReason.MAX_ATTEMPTS_EXHAUSTED)
    RETRY_REQUESTED = ("handler returns RetryAfter(s)", DlqReason.MAX_ATTEMPTS_EXHAUSTED)
    PANICKED = (
        "handler dies in a way Python cannot catch as Exception",
        DlqReason.MAX_ATTEMPTS_EXHAUSTED,
    )
    HEARTBEAT_STALE = (
        "the worker stops heartbeating (crash, OOM kill, SIGKILL, eviction)",
        DlqReason.HEARTBEAT_STALE,
    )
    DEADLINE_EXCEEDED = ("the attempt outlives deadline_duration", DlqReason.DEADLINE_EXCEEDED)
    CALLBACK_TIMEOUT = ("a callback wait times out", DlqReason.CALLBACK_TIMEOUT)
    WORKER_SHUTDOWN = (
        "the worker shuts down gracefully before the handler returns",
        DlqReason.WORKER_SHUTDOWN,
    )
    TERMINAL = (
        "TerminalError, undeserializable args, unknown kind, or a failed callback",
        DlqReason.TERMINAL_ERROR,
    )
    CANCELLED = ("handler returns Cancel(reason)", None)

    def __init__(self, text: str, dlq_reason: DlqReason | None) -> None:
        self.text = text
        self.dlq_reason = dlq_reason


_BY_CAUSE = {
    RescueCause.HEARTBEAT_STALE: AttemptEnd.HEARTBEAT_STALE,
    RescueCause.DEADLINE_EXCEEDED: AttemptEnd.DEADLINE_EXCEEDED,
    RescueCause.CALLBACK_TIMEOUT: AttemptEnd.CALLBACK_TIMEOUT,
    RescueCause.WORKER_SHUTDOWN: AttemptEnd.WORKER_SHUTDOWN,
}


def attempt_end(entry: ErrorEntry) -> AttemptEnd:
    """The row of the table an error entry records. A handler's cancel looks like an
    exception here; ``attempt_ends`` tells them apart with the job."""
    cause = RescueCause.of_error(entry.error)
    if cause is not None:
        return _BY_CAUSE[cause]
    if entry.terminal:
        return AttemptEnd.TERMINAL
    if entry.error.startswith(HANDLER_PANICKED):
        return AttemptEnd.PANICKED
    if entry.error.startswith(RETRY_REQUESTED):
        return AttemptEnd.RETRY_REQUESTED
    return AttemptEnd.RAISED


def attempt_ends(job: Job) -> list[AttemptEnd]:
    """How the attempt behind each of ``job.errors`` ended, in order. The last entry of a job
    its handler cancelled is the cancel's reason: written in the same decision as the job's
    ``finalized_at``, so they carry the same time."""
    ends = [attempt_end(entry) for entry in job.errors]
    if (
        ends
        and job.state is JobState.CANCELLED
        and not job.errors[-1].terminal
        and job.errors[-1].at == job.finalized_at
        and RescueCause.of_error(job.errors[-1].error) is None
    ):
        ends[-1] = AttemptEnd.CANCELLED
    return ends


def dlq_reason_after(last: ErrorEntry) -> str:
    """The dead-letter reason the poison-job table gives a job whose last attempt ended with
    ``last``."""
    reason = attempt_end(last).dlq_reason
    return (reason or DlqReason.MAX_ATTEMPTS_EXHAUSTED).value
