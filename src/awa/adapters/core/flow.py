"""A claim under a queue's flow limits, the same for every store: the store locks the queue's
limits and bucket and counts its live attempts (``FlowTransaction``), the domain decides which
candidates may start (``awa.domain.flow.decide_claims``), the store writes the bucket back.

The lock on the queue's limits is what makes the limit hold across the fleet: two claims of a
limited queue take turns, and each counts the attempts the other committed. It is a row lock
of the claim's own transaction (PostgreSQL's ``FOR UPDATE``, SQLite's write lock, the memory
store's lock), so a crashed claimer leaks nothing: its transaction ends and the lock with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from awa.adapters.core.transaction import FlowTransaction, QueueFlow
from awa.domain import Job
from awa.domain.flow import Candidate, FlowState, decide_claims

__all__ = ["within_limits"]


def within_limits(
    tx: FlowTransaction, queue: str, flow: QueueFlow, candidates: Sequence[Job], now: datetime
) -> list[Job]:
    """The jobs of ``candidates`` (in claim order, as many as the claim asked for) that
    ``queue``'s limits let start at ``now``, in that order; the bucket they took tokens from
    is written back in ``tx``."""
    if not candidates:
        return []
    state = FlowState(
        limits={queue: flow.limits},
        live_by_queue={queue: tx.live_attempts(queue)},
        queue_buckets={} if flow.bucket is None else {queue: flow.bucket},
    )
    asked = [Candidate(job.id, queue, priority=job.priority) for job in candidates]
    decision = decide_claims(asked, state, len(asked), now)
    bucket = decision.queue_buckets.get(queue)
    if bucket is not None:
        tx.keep_bucket(queue, bucket)
    granted = set(decision.granted)
    return [job for job in candidates if job.id in granted]
