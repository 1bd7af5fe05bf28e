"""A claim under a queue's flow limits, the same for every store: the store locks the queue's
limits, buckets and turn cursor and counts its live attempts (``FlowTransaction``), the domain
decides which candidates may start (``awa.domain.flow.decide_claims``), the store writes the
buckets and the cursor back.

The lock on the queue's limits is what makes the limit hold across the fleet: two claims of a
limited queue take turns, and each counts the attempts the other committed. It is a row lock
of the claim's own transaction (PostgreSQL's ``FOR UPDATE``, SQLite's write lock, the memory
store's lock), so a crashed claimer leaks nothing: its transaction ends and the lock with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from awa.adapters.core.transaction import FlowTransaction, QueueFlow
from awa.domain import Job, decisions
from awa.domain.flow import Bucket, Candidate, FlowState, HoldReason, QueueKey, decide_claims

__all__ = ["HeldBackCounts", "candidate_window", "within_limits"]

#: ``(queue, {reason: candidates held back})`` for each decision that held some back
CountHeldBack = Callable[[str, Mapping[HoldReason, int]], None]


def candidate_window(flow: QueueFlow | None) -> bool:
    """Whether a claim under ``flow`` reads its candidates per ``concurrency_key``: in a queue
    with key limits, a window of the first ``limit`` in claim order could be one key's jobs
    only, and the keys behind it would wait while their own limits leave them free."""
    return flow is not None and flow.limits.has_key_limits


def within_limits(
    tx: FlowTransaction,
    queue: str,
    flow: QueueFlow,
    candidates: Sequence[Job],
    batch: int,
    now: datetime,
    priority_aging_s: float = 0.0,
    count_held_back: CountHeldBack | None = None,
) -> list[Job]:
    """The jobs of ``candidates`` (in claim order, passed by the ordering filter:
    ``RowTransaction.claim_candidates``) that ``queue``'s limits let start at ``now``, at most
    ``batch``, in the order granted; the buckets they took tokens from and the turn cursor are
    written back in ``tx``."""
    if not candidates:
        return []
    limits = flow.limits
    asked = [_candidate(job, queue, now, priority_aging_s) for job in candidates]
    state = FlowState(
        limits={queue: limits},
        live_by_queue={queue: tx.live_attempts(queue)} if limits.concurrency_limit else {},
        live_by_key=_by_queue_key(queue, tx.live_by_key(queue))
        if limits.key_concurrency_limit
        else {},
        ordering_heads=_ordering_heads(asked),
        queue_buckets={} if flow.bucket is None else {queue: flow.bucket},
        key_buckets=_key_buckets(tx, queue, asked) if limits.key_rate_limit else {},
        turn_cursors={queue: flow.turn_cursor} if flow.turn_taken else {},
    )
    decision = decide_claims(asked, state, batch, now)
    bucket = decision.queue_buckets.get(queue)
    if bucket is not None:
        tx.keep_bucket(queue, bucket)
    if decision.key_buckets:
        tx.keep_key_buckets(queue, {key: b for (_, key), b in decision.key_buckets.items()})
    if queue in decision.turn_cursors:
        tx.keep_turn_cursor(queue, decision.turn_cursors[queue])
    if count_held_back is not None and any(decision.held_back.values()):
        count_held_back(queue, decision.held_back)
    by_id = {job.id: job for job in candidates}
    return [by_id[job_id] for job_id in decision.granted]


def _candidate(job: Job, queue: str, now: datetime, priority_aging_s: float) -> Candidate:
    # the band a candidate takes its turn in is its priority as the claim orders it: aged
    priority = decisions.claim_order(job, now, priority_aging_s)[0]
    return Candidate(job.id, queue, job.concurrency_key, job.ordering_key, priority)


def _by_queue_key(queue: str, counts: Mapping[str, int]) -> dict[QueueKey, int]:
    return {(queue, key): n for key, n in counts.items()}


def _ordering_heads(asked: Sequence[Candidate]) -> dict[QueueKey, int]:
    """Every ordering key's head among the candidates: the store's filter let only heads
    through, so each key's one candidate is its head; two of one key is the filter's bug."""
    heads: dict[QueueKey, int] = {}
    for candidate in asked:
        if candidate.ordering_key is not None:
            key = (candidate.queue, candidate.ordering_key)
            if key in heads:
                raise ValueError(f"the store gave two candidates of ordering key {key!r}")
            heads[key] = candidate.id
    return heads


def _key_buckets(
    tx: FlowTransaction, queue: str, asked: Sequence[Candidate]
) -> dict[QueueKey, Bucket]:
    keys = sorted({c.concurrency_key for c in asked if c.concurrency_key is not None})
    return {(queue, key): b for key, b in tx.key_buckets(queue, keys).items()} if keys else {}


class HeldBackCounts:
    """The candidates flow limits held back, by queue and reason, since they were last taken:
    what ``awa.claims.throttled`` counts (``awa.ports.CountsHeldBack``). Mixed into a store."""

    _held: dict[str, dict[str, int]] | None = None

    def _count_held_back(self, queue: str, held: Mapping[HoldReason, int]) -> None:
        with _HELD_LOCK:
            if self._held is None:
                self._held = {}
            counts = self._held.setdefault(queue, {})
            for reason, n in held.items():
                if n:
                    counts[reason] = counts.get(reason, 0) + n

    def take_held_back(self) -> dict[str, dict[str, int]]:
        """The counts by queue and reason since the last call, and start again from zero."""
        with _HELD_LOCK:
            held, self._held = self._held or {}, {}
        return held


_HELD_LOCK = threading.Lock()
