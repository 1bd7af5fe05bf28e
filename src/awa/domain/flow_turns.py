"""The order in which a claim's candidates take their turns (``awa.domain.flow_claims``).

Priority bands first; inside a band, in a queue with a key limit, one turn per
``concurrency_key`` (the jobs without a key share one, the first), in the order of the key's
text, starting after the queue's turn cursor. Text order, not the order candidates come in,
is what a store can carry from one claim to the next as one value, and what PostgreSQL can
walk from that value on an index of ``(queue, concurrency_key, ...)``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from awa.domain.flow_claims import Candidate
    from awa.domain.flow_limits import FlowLimits

__all__ = ["Turn", "bands", "in_turn", "key_order", "turn_of"]

#: ``(queue, concurrency_key)``, the key ``None`` in a queue without key limits (one turn)
Turn = tuple[str, str | None]


def turn_of(candidate: Candidate, limits: FlowLimits) -> Turn:
    """Whose turn a candidate takes: its key's, in a queue that limits keys; else its
    queue's, in claim order."""
    return candidate.queue, candidate.concurrency_key if limits.has_key_limits else None


def key_order(key: str | None) -> tuple[bool, str]:
    return key is not None, key or ""


def in_turn(
    turns: dict[Turn, deque[Candidate]], cursors: Mapping[str, str | None]
) -> dict[Turn, deque[Candidate]]:
    """``turns`` in the order they come: queue by queue as first seen, each queue's keys in
    key order starting after its cursor (a queue without key limits has one turn)."""
    queues = list(dict.fromkeys(queue for queue, _ in turns))
    ordered: dict[Turn, deque[Candidate]] = {}
    for queue in queues:
        keys = sorted((k for q, k in turns if q == queue), key=key_order)
        if queue in cursors:
            after = key_order(cursors[queue])
            keys = [k for k in keys if key_order(k) > after] + [
                k for k in keys if key_order(k) <= after
            ]
        for k in keys:
            ordered[(queue, k)] = turns[(queue, k)]
    return ordered


def bands(candidates: Sequence[Candidate]) -> Iterable[list[Candidate]]:
    """The candidates by priority, most urgent first, claim order kept within each."""
    by_priority: dict[int, list[Candidate]] = {}
    for candidate in candidates:
        by_priority.setdefault(candidate.priority, []).append(candidate)
    return (by_priority[p] for p in sorted(by_priority))
