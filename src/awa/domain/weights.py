"""Weighted queues inside one worker process: how many jobs each queue may claim now.

A process started with ``global_max_workers=N`` shares N handler slots among its queues, as
upstream AWA's weighted mode does (its ADR-011). Each queue's ``min_workers`` slots are its
own: no other queue runs in them, so the guarantee never waits for another queue's handler to
finish (nothing is preempted). The rest, the shared pool of ``N - sum(min_workers)`` slots,
goes to the queues that have work, by ``weight``, and is work-conserving: a queue with no work
holds none of it, and no shared slot stays free while some queue wants one.

Rounding: the free shared slots raise the queues that want more to one level of shared slots
per unit of weight, the exact weighted share (never taking from what a queue holds, never
giving it more than it wants); each share is rounded down and the slots left go to the
largest remainders, ties to the queue listed first (Hamilton's rule). So from an idle process
each busy queue gets its ``min_workers`` plus ``shared * weight / sum(weights)`` rounded up or
down, never further off. A queue already holding more than its share (it took an idle queue's
share earlier and its handlers still run) is dealt nothing until the others catch up; nothing
running is stopped.

Pure: ``SlotShares.claimable`` is given what each queue holds and wants; the runtime
(``awa.runtime.weighted``) keeps the counts and claims what it says.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from fractions import Fraction

import attrs

from awa.domain.errors import ValidationError
from awa.domain.validation import check_queue, shown

__all__ = [
    "SLOTS_MAX",
    "WEIGHT_MAX",
    "QueueNeed",
    "QueueWeight",
    "SlotShares",
    "check_global_max_workers",
    "check_min_workers",
    "check_weight",
]

#: the most slots one process may share (``global_max_workers``), as a queue's concurrency
SLOTS_MAX = 10_000
WEIGHT_MAX = 10_000


def _check_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(f"{name} must be an integer from {low} to {high}, got {shown(value)}")
    return value


def check_global_max_workers(value: object) -> int:
    return _check_int("global_max_workers", value, 1, SLOTS_MAX)


def check_min_workers(value: object) -> int:
    return _check_int("min_workers", value, 0, SLOTS_MAX)


def check_weight(value: object) -> int:
    return _check_int("weight", value, 1, WEIGHT_MAX)


@attrs.frozen
class QueueWeight:
    """One queue's part in the shared slots."""

    queue: str = attrs.field(converter=check_queue)
    min_workers: int = attrs.field(default=0, converter=check_min_workers)
    weight: int = attrs.field(default=1, converter=check_weight)


@attrs.frozen
class QueueNeed:
    """What one queue has now: ``held`` slots in use (running handlers and claims on their
    way) and ``wanted``, how many more jobs it could start (0: it knows of no work)."""

    held: int
    wanted: int


def _weights(queues: Iterable[QueueWeight]) -> tuple[QueueWeight, ...]:
    return tuple(queues)


@attrs.frozen
class SlotShares:
    """``total`` slots shared by ``queues`` (validated: their ``min_workers`` fit in it)."""

    total: int = attrs.field(converter=check_global_max_workers)
    queues: tuple[QueueWeight, ...] = attrs.field(converter=_weights)

    def __attrs_post_init__(self) -> None:
        names = [q.queue for q in self.queues]
        if len(set(names)) != len(names):
            raise ValidationError(f"a queue is listed twice: {names}")
        reserved = sum(q.min_workers for q in self.queues)
        if reserved > self.total:
            raise ValidationError(
                f"the queues' min_workers add up to {reserved}, more than"
                f" global_max_workers {self.total}"
            )

    @property
    def shared(self) -> int:
        """The slots no queue reserves: the pool dealt by weight."""
        return self.total - sum(q.min_workers for q in self.queues)

    def claimable(self, needs: Sequence[QueueNeed]) -> tuple[int, ...]:
        """How many more jobs each queue may claim now, in the order of ``queues``: its own
        reserved slots first, then what the shared pool deals it. Never more than it wants;
        with what every queue holds, never more than ``total`` in all."""
        if len(needs) != len(self.queues):
            raise ValueError(f"{len(needs)} needs for {len(self.queues)} queues")
        grants: list[int] = []
        pooled: list[int] = []  # shared slots each queue holds
        more: list[int] = []  # shared slots each queue wants beyond them
        for queue, need in zip(self.queues, needs, strict=True):
            held, wanted = max(0, need.held), max(0, need.wanted)
            own = min(wanted, max(0, queue.min_workers - held))
            grants.append(own)
            pooled.append(max(0, held - queue.min_workers))
            more.append(wanted - own)
        free = max(0, self.shared - sum(pooled))
        if sum(more) <= free:  # the pool is not contended: everyone gets what it wants
            return tuple(g + m for g, m in zip(grants, more, strict=True))
        for index, dealt in enumerate(self._deal(free, pooled, more)):
            grants[index] += dealt
        return tuple(grants)

    def _deal(self, free: int, pooled: list[int], more: list[int]) -> list[int]:
        """Deal ``free`` shared slots: raise every contender to one level of slots per unit of
        weight (never below what it holds, never above what it wants), then round down and
        give the slots left to the largest remainders, ties to the queue listed first."""
        weights = [q.weight for q in self.queues]
        contenders = [i for i in range(len(more)) if more[i] > 0]
        target = sum(pooled[i] for i in contenders) + free
        level = _level(target, [(pooled[i], pooled[i] + more[i], weights[i]) for i in contenders])
        shares = {i: _clamp(level * weights[i], pooled[i], pooled[i] + more[i]) for i in contenders}
        dealt = [0] * len(more)
        for i, share in shares.items():
            dealt[i] = math.floor(share) - pooled[i]
        left = free - sum(dealt)
        by_remainder = sorted(contenders, key=lambda i: (-(shares[i] - math.floor(shares[i])), i))
        for i in by_remainder[:left]:
            dealt[i] += 1
        return dealt


def _level(target: int, spans: list[tuple[int, int, int]]) -> Fraction:
    """The level ``x`` at which ``sum(clamp(x * weight, low, high))`` over ``spans`` of
    ``(low, high, weight)`` reaches ``target`` (between their lows' and highs' sums)."""

    def filled(x: Fraction) -> Fraction:
        return sum((_clamp(x * w, lo, hi) for lo, hi, w in spans), Fraction(0))

    points = sorted({Fraction(b, w) for lo, hi, w in spans for b in (lo, hi)})
    below = points[0]
    for point in points:
        if filled(point) >= target:
            break
        below = point
    # between two points each span is flat or rises with its weight: solve the line
    rising = sum(w for lo, hi, w in spans if Fraction(lo, w) <= below < Fraction(hi, w))
    if rising == 0:
        return below
    return below + (target - filled(below)) / rising


def _clamp(x: Fraction, low: int, high: int) -> Fraction:
    return Fraction(low) if x < low else Fraction(high) if x > high else x
