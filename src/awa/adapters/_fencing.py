"""The fenced-write loop, written once for every store adapter.

A store locks the rows whose ``(id, run_lease, live state)`` the caller still owns; this loop
lets the domain decide each request in request order, maps the domain's refusals to ``Stale``,
and collects the decided rows in ``Writes`` for the store to write back in the same
transaction. A later request for the same job sees the earlier one's result, as if the
requests had come one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

import attrs

from awa.domain import (
    CallbackNotFound,
    Decision,
    IllegalTransition,
    Job,
    JobState,
    Lease,
    ScheduleRecord,
)
from awa.domain.fencing import StaleReason, stale_reason
from awa.ports import Applied, Stale, WriteResult

__all__ = ["Decide", "Locked", "Writes", "available_queues", "fence", "stale_results"]


def available_queues(jobs: Iterable[Job]) -> list[str]:
    """Queues that got runnable jobs: each gets one wake-up."""
    return sorted({job.queue for job in jobs if job.state is JobState.AVAILABLE})


@attrs.frozen
class Locked:
    """A job row the transaction holds locked, with its queue's dead-letter setting."""

    job: Job
    dlq_enabled: bool


class Writes:
    """What one transaction decided, for the store to write back: changed jobs, jobs that move
    to the dead-letter queue (with their reason), jobs that come back from it, schedules
    registered or changed, and the hints to send once it commits."""

    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}
        self.dead_letters: dict[int, str] = {}
        self.restored: list[Job] = []
        self.cancelled: list[Lease] = []  # live attempts an operator cancelled
        self.answered: list[Lease] = []  # attempts whose callback the external side answered
        self.schedules: list[ScheduleRecord] = []  # added or changed (upserted by name)

    def keep(self, job: Job) -> None:
        self.jobs[job.id] = job

    def decided(self, decision: Decision, dlq_enabled: bool) -> bool:
        """Record a decision; returns whether it sends the job to the dead-letter queue."""
        self.keep(decision.job)
        reason = decision.dead_letter_reason(dlq_enabled)
        if reason is not None:
            self.dead_letters[decision.job.id] = reason
        return reason is not None

    def dead_letter(self, job_id: int, reason: str) -> None:
        self.dead_letters[job_id] = reason

    def restore(self, job: Job) -> None:
        self.restored.append(job)

    def available_queues(self) -> list[str]:
        """Queues that got runnable jobs: each gets one wake-up."""
        return available_queues([*self.jobs.values(), *self.restored])

    def __bool__(self) -> bool:
        return bool(self.jobs or self.dead_letters or self.restored or self.schedules)


#: ``(request index, the job as this batch left it, the transaction's now) -> the new job``,
#: either a plain value (a state-keeping write) or a ``Decision`` (which may dead-letter it)
Decide = Callable[[int, Job, datetime], "Job | Decision"]


def fence(
    leases: Sequence[Lease],
    locked: Mapping[Lease, Locked],
    decide: Decide,
    now: datetime,
    writes: Writes,
) -> tuple[list[WriteResult | None], list[int]]:
    """Decide every request whose lease owns a locked job, in request order.

    Returns one result per request (``None`` where the lease owns nothing that is locked) and
    the indexes of those requests, whose stale reasons ``stale_results`` gives once the store
    has looked their jobs up."""
    current: dict[int, Job | None] = {}  # jobs this batch changed; None: dead-lettered
    results: list[WriteResult | None] = []
    unowned: list[int] = []
    for index, lease in enumerate(leases):
        found = locked.get(lease)
        if found is None:
            results.append(None)
            unowned.append(index)
            continue
        job = found.job
        if lease.job_id in current:
            latest = current[lease.job_id]
            if latest is None:
                results.append(Stale(lease, StaleReason.NOT_FOUND))
                continue
            job = latest
        try:
            decided = decide(index, job, now)
        except IllegalTransition:
            results.append(Stale(lease, stale_reason(lease, (job.run_lease, job.state))))
            continue
        except CallbackNotFound:
            results.append(Stale(lease, StaleReason.CALLBACK_RESOLVED))
            continue
        if isinstance(decided, Decision):
            dead = writes.decided(decided, found.dlq_enabled)
            new = decided.job
        else:
            writes.keep(decided)
            dead, new = False, decided
        current[job.id] = None if dead else new
        results.append(Applied(new))
    return results, unowned


def stale_results(
    results: Sequence[WriteResult | None],
    leases: Sequence[Lease],
    states: Mapping[int, tuple[int, JobState]],
) -> list[WriteResult]:
    """Each request's result, the unowned ones (``None``) as ``Stale`` with the reason their
    job's current ``(run_lease, state)`` gives (a job missing from ``states`` is gone)."""
    filled: list[WriteResult] = []
    for index, result in enumerate(results):
        lease = leases[index]
        filled.append(result or Stale(lease, stale_reason(lease, states.get(lease.job_id))))
    return filled
