"""Which of a claim's candidates may start now, under their queues' flow limits.

A store reads, inside its claim transaction, the candidates in claim order
``(priority, run_at, id)`` and the ``FlowState`` (limits, live attempts, ordering heads,
buckets); ``decide_claims`` says which ids to claim and what the buckets hold after them.
The store then writes exactly that. Deciding here, once, keeps the memory and SQLite stores
from each growing their own idea of a limit; PostgreSQL's claim statement must agree with it
(``docs/flow-control-design.md``).

The rules, each a law the tests hold:

- **Slots.** After the claim no queue has more than ``concurrency_limit`` live attempts and
  no ``(queue, concurrency_key)`` more than ``key_concurrency_limit``. A count already at or
  over its limit (a limit lowered below what runs) grants nothing more; nothing is stopped.
- **Rates.** A start takes a token from the queue's bucket and from its key's bucket; a
  candidate is granted only if every bucket it needs has a whole token.
- **Ordering.** A job with an ``ordering_key`` may start only if no attempt of its
  ``(queue, ordering_key)`` is live and it is the key's head: the oldest (lowest id)
  unfinished job of that key. So jobs of one key run one at a time in insert order; a head
  that is snoozed, retrying or scheduled for later holds its followers back until it
  finishes. Priority and ``run_at`` order keys against each other, not a key's own jobs.
- **Turns between keys.** In a queue with a key limit, candidates of one priority are taken
  one per ``concurrency_key`` per round, so one key with 10,000 jobs cannot fill a batch
  ahead of a hundred keys with ten. Jobs with no key take their turn as one more key, the
  first. Keys go in the order of their text, starting after the queue's turn cursor: the
  key the last claim granted last, handed back in the decision for the store to keep. So
  turns go on across claims too: claims of one job each still visit every key in turn,
  rather than always the key with the oldest job. Priority still comes first: every round of
  priority 1 before any of priority 2.
- **Work-conserving.** A candidate is held back only by a limit it is under; the batch
  fills while any candidate is free to start.

Each candidate held back is counted once, under the first reason in ``HOLD_REASONS`` order
that holds it; candidates left when the batch is full are not counted at all.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Literal

import attrs

from awa.domain.defaults import DEFAULT_PRIORITY
from awa.domain.errors import ValidationError
from awa.domain.flow_buckets import Bucket, full_bucket, take, tokens_available
from awa.domain.flow_limits import FlowLimits, RateLimit
from awa.domain.flow_turns import Turn, bands, in_turn, turn_of
from awa.domain.validation import shown

__all__ = [
    "HOLD_REASONS",
    "Candidate",
    "ClaimDecision",
    "FlowState",
    "HoldReason",
    "QueueKey",
    "decide_claims",
]

HoldReason = Literal["concurrency", "key_concurrency", "ordering", "rate", "key_rate"]
#: slot limits before rates: a queue that is full reports "concurrency" for every job it holds
HOLD_REASONS: tuple[HoldReason, ...] = (
    "concurrency",
    "key_concurrency",
    "ordering",
    "rate",
    "key_rate",
)
#: ``(queue, key)``: a key is its queue's own (the same key in two queues is two keys)
QueueKey = tuple[str, str]

_NO_LIMITS = FlowLimits()


@attrs.frozen
class Candidate:
    """A job the claim could start: what the flow rules need of it, nothing more."""

    id: int
    queue: str
    concurrency_key: str | None = None
    ordering_key: str | None = None
    priority: int = DEFAULT_PRIORITY


@attrs.frozen(kw_only=True)
class FlowState:
    """What the store read in the claim's transaction. Counts and buckets it leaves out
    are zero and full; ``ordering_heads`` must name the head of every ``ordering_key`` among
    the candidates (the lowest id of the key's unfinished jobs: scheduled, available,
    retryable, running or waiting_external)."""

    limits: Mapping[str, FlowLimits] = attrs.field(factory=dict)
    live_by_queue: Mapping[str, int] = attrs.field(factory=dict)
    live_by_key: Mapping[QueueKey, int] = attrs.field(factory=dict)
    ordering_live: frozenset[QueueKey] = frozenset()
    ordering_heads: Mapping[QueueKey, int] = attrs.field(factory=dict)
    queue_buckets: Mapping[str, Bucket] = attrs.field(factory=dict)
    key_buckets: Mapping[QueueKey, Bucket] = attrs.field(factory=dict)
    #: per queue with a key limit, the key whose turn came last (``None``: the jobs without
    #: a key); a queue left out starts its turns at the first key
    turn_cursors: Mapping[str, str | None] = attrs.field(factory=dict)


@attrs.frozen
class ClaimDecision:
    """The ids to claim, in the order granted; the buckets tokens were taken from, as they
    are after it, and the turn cursors of the queues that granted (write both back); and
    the candidates held back, by reason."""

    granted: tuple[int, ...]
    queue_buckets: Mapping[str, Bucket]
    key_buckets: Mapping[QueueKey, Bucket]
    held_back: Mapping[HoldReason, int]
    turn_cursors: Mapping[str, str | None] = attrs.field(factory=dict)


class _Tally:
    """The decision under way: live counts, whole tokens and grants so far."""

    def __init__(self, state: FlowState, now: datetime) -> None:
        self.state = state
        self.now = now
        self.by_queue: dict[str, int] = {}
        self.by_key: dict[QueueKey, int] = {}
        self.queue_tokens: dict[str, int] = {}
        self.key_tokens: dict[QueueKey, int] = {}
        self.queue_taken: dict[str, int] = {}
        self.key_taken: dict[QueueKey, int] = {}
        self.granted: list[int] = []
        self.cursors: dict[str, str | None] = {}
        self.held: dict[HoldReason, int] = dict.fromkeys(HOLD_REASONS, 0)

    def limits(self, queue: str) -> FlowLimits:
        return self.state.limits.get(queue, _NO_LIMITS)

    def _queue_tokens(self, queue: str, limit: RateLimit) -> int:
        if queue not in self.queue_tokens:
            bucket = _bucket(self.state.queue_buckets.get(queue), limit, self.now)
            self.queue_tokens[queue] = tokens_available(bucket, limit, self.now)
        return self.queue_tokens[queue] - self.queue_taken.get(queue, 0)

    def _key_tokens(self, key: QueueKey, limit: RateLimit) -> int:
        if key not in self.key_tokens:
            bucket = _bucket(self.state.key_buckets.get(key), limit, self.now)
            self.key_tokens[key] = tokens_available(bucket, limit, self.now)
        return self.key_tokens[key] - self.key_taken.get(key, 0)

    def queue_hold(self, queue: str) -> HoldReason | None:
        """What holds every candidate of ``queue`` back, if anything does."""
        limits = self.limits(queue)
        if limits.concurrency_limit is not None:
            live = self.state.live_by_queue.get(queue, 0) + self.by_queue.get(queue, 0)
            if live >= limits.concurrency_limit:
                return "concurrency"
        if limits.rate_limit is not None and self._queue_tokens(queue, limits.rate_limit) < 1:
            return "rate"
        return None

    def key_hold(self, key: QueueKey) -> HoldReason | None:
        """What holds every candidate of ``(queue, concurrency_key)`` back, if anything."""
        limits = self.limits(key[0])
        if limits.key_concurrency_limit is not None:
            live = self.state.live_by_key.get(key, 0) + self.by_key.get(key, 0)
            if live >= limits.key_concurrency_limit:
                return "key_concurrency"
        if limits.key_rate_limit is not None and self._key_tokens(key, limits.key_rate_limit) < 1:
            return "key_rate"
        return None

    def ordering_hold(self, candidate: Candidate) -> bool:
        if candidate.ordering_key is None:
            return False
        key = (candidate.queue, candidate.ordering_key)
        if key in self.state.ordering_live:
            return True
        head = self.state.ordering_heads.get(key)
        if head is None:
            raise ValueError(f"the store gave no ordering head for {key!r}")
        return head != candidate.id

    def hold(self, candidate: Candidate) -> HoldReason | None:
        """The first reason, in ``HOLD_REASONS`` order, that holds ``candidate`` back."""
        queue_hold = self.queue_hold(candidate.queue)
        if queue_hold == "concurrency":
            return queue_hold
        key_hold = None
        if candidate.concurrency_key is not None and self.limits(candidate.queue).has_key_limits:
            key_hold = self.key_hold((candidate.queue, candidate.concurrency_key))
            if key_hold == "key_concurrency":
                return key_hold
        if self.ordering_hold(candidate):
            return "ordering"
        return queue_hold or key_hold

    def grant(self, candidate: Candidate) -> None:
        queue = candidate.queue
        limits = self.limits(queue)
        self.granted.append(candidate.id)
        self.by_queue[queue] = self.by_queue.get(queue, 0) + 1
        if limits.rate_limit is not None:
            self.queue_taken[queue] = self.queue_taken.get(queue, 0) + 1
        if limits.has_key_limits:
            self.cursors[queue] = candidate.concurrency_key
        if candidate.concurrency_key is not None and limits.has_key_limits:
            key = (queue, candidate.concurrency_key)
            self.by_key[key] = self.by_key.get(key, 0) + 1
            if limits.key_rate_limit is not None:
                self.key_taken[key] = self.key_taken.get(key, 0) + 1

    def decision(self) -> ClaimDecision:
        queue_buckets: dict[str, Bucket] = {}
        for queue, count in self.queue_taken.items():
            limit = self.limits(queue).rate_limit
            assert limit is not None  # only a rate-limited queue's tokens are taken
            bucket = _bucket(self.state.queue_buckets.get(queue), limit, self.now)
            queue_buckets[queue] = _taken(bucket, limit, count, self.now)
        key_buckets: dict[QueueKey, Bucket] = {}
        for key, count in self.key_taken.items():
            limit = self.limits(key[0]).key_rate_limit
            assert limit is not None
            bucket = _bucket(self.state.key_buckets.get(key), limit, self.now)
            key_buckets[key] = _taken(bucket, limit, count, self.now)
        return ClaimDecision(
            tuple(self.granted), queue_buckets, key_buckets, dict(self.held), dict(self.cursors)
        )


def _bucket(stored: Bucket | None, limit: RateLimit, now: datetime) -> Bucket:
    return full_bucket(limit, now) if stored is None else stored


def _taken(bucket: Bucket, limit: RateLimit, count: int, now: datetime) -> Bucket:
    granted, after = take(bucket, limit, count, now)
    assert granted == count  # the tally granted only whole tokens the bucket had
    return after


def decide_claims(
    candidates: Sequence[Candidate], state: FlowState, batch_size: int, now: datetime
) -> ClaimDecision:
    """Which of ``candidates`` (in claim order, ids distinct) to claim at ``now``: at most
    ``batch_size``, under ``state``'s limits; see the module's rules."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 0:
        raise ValidationError(f"batch_size must be an integer >= 0, got {shown(batch_size)}")
    if len({c.id for c in candidates}) != len(candidates):
        raise ValueError("candidates hold the same job twice")
    tally = _Tally(state, now)
    for band in bands(candidates):
        turns: dict[Turn, deque[Candidate]] = {}
        for candidate in band:
            key = turn_of(candidate, tally.limits(candidate.queue))
            turns.setdefault(key, deque()).append(candidate)
        turns = in_turn(turns, state.turn_cursors)
        while turns and len(tally.granted) < batch_size:
            for key in list(turns):
                if len(tally.granted) == batch_size:
                    break
                if key in turns:  # a queue's limit may have ended its other keys' turns
                    _take_turn(tally, key, turns)
    return tally.decision()


def _take_turn(
    tally: _Tally,
    key: Turn,
    turns: dict[Turn, deque[Candidate]],
) -> None:
    """Grant the next candidate of ``key`` that may start, counting those passed over.
    Limits only tighten as a decision goes on, so once the queue's slots or tokens run out
    its turns end, and once a key's do, that key's turn ends: what they held is counted."""
    waiting = turns[key]
    while waiting:
        candidate = waiting.popleft()
        reason = tally.hold(candidate)
        if reason is None:
            tally.grant(candidate)
            break
        tally.held[reason] += 1
        if reason in ("concurrency", "rate"):
            for other in [k for k in turns if k[0] == key[0]]:
                _end_turn(tally, turns.pop(other))
            return
        if reason in ("key_concurrency", "key_rate"):  # only a keyed turn has key limits
            _end_turn(tally, waiting)
    if not waiting:
        del turns[key]


def _end_turn(tally: _Tally, waiting: deque[Candidate]) -> None:
    """Count each candidate left under its own first reason (a limit holds it, but an
    earlier reason in ``HOLD_REASONS`` may hold it too)."""
    while waiting:
        reason = tally.hold(waiting.popleft())
        assert reason is not None, "a limit that ran out let a candidate through"
        tally.held[reason] += 1
