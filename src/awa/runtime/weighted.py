"""The shared slots of a process started with ``global_max_workers`` (weighted queues).

The domain's ``SlotShares`` decides; this keeps the counts it is given: what each queue holds
(running handlers, and slots reserved for its claims on their way, so two queues' claims
in flight together never take the same slot) and whether it has work. A queue has work
until a claim comes back with fewer jobs than it asked for, and again when the store says
jobs are available or its poll interval comes round: so a queue with nothing to do holds no
share of the pool, and one round trip tells the others.

Claims stay batched: each claim asks for everything the queue may take now, reserved before
the claim is sent (upstream's permit-before-claim), and what comes back short is returned to
the pool at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from awa.domain import ValidationError
from awa.domain.weights import QueueNeed, QueueWeight, SlotShares
from awa.runtime.attempt_table import AttemptTable
from awa.runtime.config import QueueConfig

__all__ = ["SharedSlots", "shared_slots"]


def shared_slots(
    total: int | None,
    queues: Sequence[QueueConfig],
    table: AttemptTable,
    wake: Callable[[str], None],
) -> SharedSlots | None:
    """The shared slots for ``total`` (``None``: none, each queue has its own concurrency)."""
    if total is None:
        for queue in queues:
            if queue.min_workers or queue.weight != 1:
                raise ValidationError(
                    f"queue {queue.queue}: min_workers and weight apply only with"
                    " global_max_workers"
                )
        return None
    shares = SlotShares(
        total,
        tuple(QueueWeight(q.queue, min_workers=q.min_workers, weight=q.weight) for q in queues),
    )
    return SharedSlots(shares, queues, table, wake)


class SharedSlots:
    """One process's ``global_max_workers`` slots, shared among its queues."""

    def __init__(
        self,
        shares: SlotShares,
        queues: Sequence[QueueConfig],
        table: AttemptTable,
        wake: Callable[[str], None],
    ) -> None:
        """``wake(queue)`` wakes a queue's claim service: slots came back to the pool."""
        self.shares = shares
        self._names = [q.queue for q in shares.queues]
        self._index = {name: i for i, name in enumerate(self._names)}
        self._ceiling = {q.queue: q.concurrency for q in queues}
        self._table = table
        self._wake = wake
        self._claiming = dict.fromkeys(self._names, 0)
        self._has_work = dict.fromkeys(self._names, True)  # unknown at first: look

    @property
    def total(self) -> int:
        return self.shares.total

    def held(self, queue: str) -> int:
        """Slots ``queue`` uses now: running handlers, and claims on their way."""
        table = self._table
        return table.running(queue) + table.waiting(queue) + self._claiming[queue]

    def _wanted(self, queue: str, held: int) -> int:
        return max(0, self._ceiling[queue] - held) if self._has_work[queue] else 0

    def reserve(self, queue: str, limit: int) -> int:
        """How many jobs ``queue`` may claim now, at most ``limit``; they are reserved until
        ``landed``."""
        needs = []
        for name in self._names:
            held = self.held(name)
            needs.append(QueueNeed(held=held, wanted=self._wanted(name, held)))
        granted = min(limit, self.shares.claimable(needs)[self._index[queue]])
        self._claiming[queue] += granted
        return granted

    def landed(self, queue: str, reserved: int, claimed: int | None) -> None:
        """A claim of ``reserved`` jobs came back with ``claimed`` (started by now), or
        failed (``None``): the rest return to the pool, and a short claim means the queue
        has no more work for now."""
        self._claiming[queue] -= reserved
        if claimed is not None and claimed < reserved:
            self._has_work[queue] = False
        if claimed is None or claimed < reserved:
            self.freed()

    def work_arrived(self, queue: str) -> None:
        """The store says ``queue`` has jobs (or its poll came round): it wants slots again."""
        self._has_work[queue] = True

    def has_work(self, queue: str) -> bool:
        return self._has_work[queue]

    def freed(self) -> None:
        """Slots came back (a handler ended, a claim came back short): every queue that wants
        slots may now be dealt some, not only the one that gave them back."""
        for name in self._names:
            if self._has_work[name] and self.held(name) < self._ceiling[name]:
                self._wake(name)
