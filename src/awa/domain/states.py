"""The eight durable states a job can be in."""

from __future__ import annotations

import enum

__all__ = ["LIVE_STATES", "TERMINAL_STATES", "JobState"]


class JobState(str, enum.Enum):
    """Where a job is in its lifecycle. The value is what the store persists."""

    SCHEDULED = "scheduled"
    AVAILABLE = "available"
    RUNNING = "running"
    WAITING_EXTERNAL = "waiting_external"
    RETRYABLE = "retryable"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    def __str__(self) -> str:
        return self.value

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_STATES

    @property
    def is_live(self) -> bool:
        """Owned by exactly one attempt, identified by ``(job_id, run_lease)``."""
        return self in LIVE_STATES


TERMINAL_STATES = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED})
LIVE_STATES = frozenset({JobState.RUNNING, JobState.WAITING_EXTERNAL})
