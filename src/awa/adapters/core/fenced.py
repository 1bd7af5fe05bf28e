"""The writes every role of the core builds on: a store's transaction, the fenced-write loop
over it, the check that a move retaking a unique key finds no other holder, the rerun when a
concurrent insert took the key all the same, and row 17 for jobs a transaction holds.

Unique keys are enforced by the store (a PostgreSQL unique index, the memory store's key
table); the core checks, before writing, that a move which retakes a key finds no other holder
(``awa.domain.unique``). A store that finds the key taken at the write all the same (a
concurrent insert committed in between) raises ``UniqueKeyRace`` and the core runs the verb
again, when its check sees the new holder.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TypeVar

from awa.adapters._fencing import Decide, Locked, Writes, fence, stale_results
from awa.adapters.core.transaction import Transaction, UniqueKeyRace
from awa.domain import DatabaseError, Job, Lease, RandomSource, decisions, retakes_unique_key
from awa.ports import WriteResult

__all__ = ["KEY_RACE_RERUNS", "FencedCore", "cancel_locked", "holder_refusing"]

R = TypeVar("R")
#: how often a verb runs again when concurrent inserts keep taking the key it retakes
KEY_RACE_RERUNS = 5


class FencedCore(abc.ABC):
    """What each role's verbs share: the store's transaction and the writes over it."""

    #: the backoff jitter's source (seeded in tests and simulation)
    rng: RandomSource

    @abc.abstractmethod
    def _transaction(self, action: str) -> AbstractContextManager[Transaction]:
        """One transaction; ``action`` names it in errors ("finishing jobs failed: ...")."""

    def _fenced(self, action: str, leases: Sequence[Lease], decide: Decide) -> list[WriteResult]:
        if not leases:
            return []
        with self._transaction(action) as tx:
            return self._fenced_in(tx, leases, decide)

    def _fenced_in(
        self, tx: Transaction, leases: Sequence[Lease], decide: Decide
    ) -> list[WriteResult]:
        """Lock the leases → the domain decides in request order → refusals become
        ``Stale`` → the decided rows are written back."""
        locked = tx.lock_leases(leases)
        writes = Writes()
        if locked:
            results, unowned = fence(leases, locked, decide, tx.now(), writes)
        else:
            results, unowned = [None] * len(leases), list(range(len(leases)))
        if writes.jobs:  # a decision keeps the job it decided, a dead-lettered one too
            tx.write(writes)
        states = tx.lease_states(sorted({leases[i].job_id for i in unowned})) if unowned else {}
        return stale_results(results, leases, states)

    def _rerun_on_key_race(self, action: Callable[[], R]) -> R:
        for _ in range(KEY_RACE_RERUNS - 1):
            try:
                return action()
            except UniqueKeyRace:
                continue
        try:
            return action()
        except UniqueKeyRace as race:
            raise DatabaseError(
                f"a unique key kept being taken by concurrent inserts ({KEY_RACE_RERUNS}"
                " tries); nothing changed, try again"
            ) from race


def holder_refusing(
    tx: Transaction, before: Job | None, after: Job, taken: dict[str, Job]
) -> Job | None:
    """The job that holds the key ``after`` would take back (a job taken back earlier in the
    same transaction counts), or ``None``, when the key is then noted as taken."""
    if not retakes_unique_key(before, after) or after.unique_key is None:
        return None
    key = after.unique_key
    if key in taken:
        return taken[key]
    locked = tx.lock_unique_holder(key)
    if locked is not None and locked.job.id != after.id:
        return locked.job
    taken[key] = after
    return None


def cancel_locked(tx: Transaction, batch: Sequence[Locked]) -> list[Job]:
    """Row 17 for every job of ``batch``, which ``tx`` holds, written back in one write; a
    running handler is signalled."""
    now, writes = tx.now(), Writes()
    for locked in batch:
        decision = decisions.cancel(locked.job, now)
        if locked.job.state.is_live:
            writes.cancelled.append(locked.job.lease)
        writes.decided(decision, locked.dlq_enabled)
    tx.write(writes)
    return list(writes.jobs.values())
