"""Which retention keeps a finished job, and for how long by default.

A completed job is history; a failed or cancelled one is evidence: the payload, the errors
and the reason of something an operator may still have to look at, redrive or report. On a
queue without the dead-letter queue (the default) a failed job is that evidence's only copy,
so it is kept longer than a completed one. The table below is the one rule every store
follows (``StoreCore.delete_finished`` deletes one retention at a time, each store only runs
"delete these states past this queue setting"): a terminal state missing from it would
never leave the store, which ``tests/domain/test_retention.py`` forbids.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

from awa.domain.states import JobState

__all__ = [
    "DLQ_RETENTION_S",
    "FAILED_RETENTION_S",
    "FINISHED_RETENTION_S",
    "RETENTION_OF",
    "Retention",
    "retained_states",
]

_DAY_S = 86_400.0
#: completed jobs, on a queue without a retention of its own: a day of history
FINISHED_RETENTION_S = _DAY_S
#: failed and cancelled jobs outside the dead-letter queue: a week, so a failure on a Friday
#: evening is still there after a long weekend (and after a week's holiday rota), at the cost
#: of keeping a week of failures, usually a small share of the jobs
FAILED_RETENTION_S = 7 * _DAY_S
#: dead-letter entries: the dead-letter queue is the place to keep failures for longer
DLQ_RETENTION_S = 30 * _DAY_S


class Retention(enum.Enum):
    """A retention period of finished jobs; its value names the queue setting
    (``QueueSettings``) that overrides the maintenance leader's default for one queue."""

    COMPLETED = "finished_retention_s"
    FAILED = "failed_retention_s"


#: the retention of each terminal state
RETENTION_OF: Mapping[JobState, Retention] = MappingProxyType(
    {
        JobState.COMPLETED: Retention.COMPLETED,
        JobState.FAILED: Retention.FAILED,
        JobState.CANCELLED: Retention.FAILED,
    }
)


def retained_states(retention: Retention) -> tuple[JobState, ...]:
    """The terminal states ``retention`` keeps, in the order of ``JobState``."""
    return tuple(state for state in JobState if RETENTION_OF.get(state) is retention)
