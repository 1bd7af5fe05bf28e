"""Why a fenced write matched nothing: the writer no longer owns the attempt.

Every store answers a write for a lease that lost its job with the same ``StaleReason``, decided
here from what the job looks like now."""

from __future__ import annotations

import enum

from awa.domain.states import JobState
from awa.domain.values import Lease

__all__ = ["StaleReason", "stale_reason"]


class StaleReason(str, enum.Enum):
    """Why a fenced write matched nothing: the writer no longer owns the attempt."""

    NOT_FOUND = "not_found"  # the job is gone (purged, or moved to the dead-letter queue)
    LEASE_SUPERSEDED = "lease_superseded"  # a newer attempt holds the job
    CANCELLED = "cancelled"  # an operator cancelled the job; a worker should stop
    STATE_CHANGED = "state_changed"  # rescued or finished: the attempt already ended
    CALLBACK_RESOLVED = "callback_resolved"  # the external side answered before the park

    def __str__(self) -> str:
        return self.value


def stale_reason(lease: Lease, current: tuple[int, JobState] | None) -> StaleReason:
    """Why a write for ``lease`` matched nothing, given the job's ``(run_lease, state)`` now
    (``None``: the job is not among the jobs any more)."""
    if current is None:
        return StaleReason.NOT_FOUND
    run_lease, state = current
    if run_lease != lease.run_lease:
        return StaleReason.LEASE_SUPERSEDED
    if state is JobState.CANCELLED:
        return StaleReason.CANCELLED
    return StaleReason.STATE_CHANGED
