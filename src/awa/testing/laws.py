"""Laws about one job that hold in every state, whatever happened before.

``field_disagreements(job)`` says where a job's fields disagree with its state: an attempt
that ended must leave no deadline or callback behind, a finished job carries the time it
finished and a live one does not, and so on. The state machine checks it after every step and
the simulator at every answer, so a decision or a store that forgets to clear (or set) a field
on one rare path fails there, whichever path it is.

The rules come from the lifecycle specification, not from ``awa.domain.decisions``: they are
what every decision must leave true.
"""

from __future__ import annotations

from awa.domain import Job, JobState

__all__ = ["field_disagreements"]

_PENDING = frozenset({JobState.SCHEDULED, JobState.AVAILABLE, JobState.RETRYABLE})


def field_disagreements(job: Job) -> list[str]:
    """Every way ``job``'s fields disagree with its state (empty when they agree)."""
    found = [
        f"job {job.id} ({job.state.value}): {problem}"
        for problem in (*_attempt(job), *_callback(job), *_ending(job))
    ]
    return found


def _attempt(job: Job) -> list[str]:
    """A job that was never claimed has no attempt; a live one is inside its attempt."""
    problems = []
    if not 0 <= job.attempt <= job.max_attempts:
        problems.append(f"attempt {job.attempt} outside 0..{job.max_attempts}")
    claimed = job.run_lease > 0
    if claimed != (job.attempted_at is not None) or claimed != (job.heartbeat_at is not None):
        problems.append(
            f"run_lease {job.run_lease} but attempted_at {job.attempted_at},"
            f" heartbeat_at {job.heartbeat_at}"
        )
    if not claimed and (job.attempt or job.errors or job.callback_result is not None):
        problems.append("never claimed, yet it has attempts, errors or a callback result")
    if job.state.is_live and job.attempt < 1:
        problems.append("live with no attempt")
    if job.state in _PENDING and job.attempt >= job.max_attempts:
        problems.append("waiting to run with no attempt left")  # the poison-job rule
    if (
        job.state.is_live
        and job.deadline_at is not None
        and job.attempted_at is not None
        and job.deadline_at < job.attempted_at
    ):
        problems.append(f"deadline {job.deadline_at} before the attempt began")
    return problems


def _callback(job: Job) -> list[str]:
    """A callback id and its timeout come and go together, and only a live attempt has one."""
    problems = []
    if (job.callback_id is None) != (job.callback_timeout_at is None):
        problems.append(
            f"callback_id {job.callback_id!r} but callback_timeout_at {job.callback_timeout_at}"
        )
    if job.state is JobState.WAITING_EXTERNAL and job.callback_id is None:
        problems.append("waiting on no callback")
    return problems


def _ending(job: Job) -> list[str]:
    """An attempt that ended leaves nothing of itself live; a finished job says when."""
    problems = []
    if not job.state.is_live:
        leftovers = {
            "deadline_at": job.deadline_at,
            "callback_id": job.callback_id,
            "callback_timeout_at": job.callback_timeout_at,
        }
        kept = [name for name, value in leftovers.items() if value is not None]
        if kept:
            problems.append(f"not live, yet keeps {', '.join(kept)}")
    if job.state.is_terminal != (job.finalized_at is not None):
        problems.append(f"finalized_at {job.finalized_at}")
    if job.state is JobState.COMPLETED and job.progress is not None:
        problems.append("completed with progress left over")
    if job.state in (JobState.RETRYABLE, JobState.FAILED) and not job.errors:
        problems.append("failed or retrying with no error recorded")
    return problems
