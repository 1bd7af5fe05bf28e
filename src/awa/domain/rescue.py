"""Why maintenance ends an attempt nobody finished, and what it records."""

from __future__ import annotations

import enum
from datetime import datetime, timedelta

from awa.domain.states import JobState
from awa.domain.values import DlqReason, Job

__all__ = ["RescueCause", "rescue_cause"]


class RescueCause(enum.Enum):
    """Each cause carries the exact error text and dead-letter reason of the poison-job table."""

    HEARTBEAT_STALE = ("heartbeat stale: worker presumed dead", DlqReason.HEARTBEAT_STALE)
    DEADLINE_EXCEEDED = ("hard deadline exceeded", DlqReason.DEADLINE_EXCEEDED)
    CALLBACK_TIMEOUT = ("callback timed out", DlqReason.CALLBACK_TIMEOUT)
    #: row 22: not maintenance's finding but the worker's own, as it shuts down gracefully
    #: with the handler still running (``decisions.release``); ``rescue_cause`` never gives it
    WORKER_SHUTDOWN = (
        "worker shut down before the attempt finished",
        DlqReason.WORKER_SHUTDOWN,
    )

    def __init__(self, error: str, dlq_reason: DlqReason) -> None:
        self.error = error
        self.dlq_reason = dlq_reason

    @classmethod
    def of_error(cls, error: str) -> RescueCause | None:
        """The cause whose exact text ``error`` is (an entry of a job's history), if any."""
        return _BY_ERROR.get(error)


_BY_ERROR = {cause.error: cause for cause in RescueCause}


def rescue_cause(job: Job, now: datetime, staleness_s: float) -> RescueCause | None:
    """The reason maintenance should end ``job``'s attempt now, or ``None``.

    A dead worker is the root cause when both its heartbeat and its deadline have lapsed, so a
    stale heartbeat wins over a passed deadline.
    """
    if job.state is JobState.RUNNING:
        if job.heartbeat_at is not None and now - job.heartbeat_at > timedelta(seconds=staleness_s):
            return RescueCause.HEARTBEAT_STALE
        if job.deadline_at is not None and now > job.deadline_at:
            return RescueCause.DEADLINE_EXCEEDED
    if (
        job.state is JobState.WAITING_EXTERNAL
        and job.callback_timeout_at is not None
        and now > job.callback_timeout_at
    ):
        return RescueCause.CALLBACK_TIMEOUT
    return None
