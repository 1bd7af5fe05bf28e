"""The core's own insert, claim, promote and fire, for stores whose rows the domain decides
one by one (memory, SQLite): lock the rows a ``RowTransaction`` reads, let the domain decide
(``awa.domain.decisions``, ``awa.domain.unique``), write the decided rows back.

PostgreSQL takes none of these: it runs each as one statement that computes the same values
in SQL (``PostgresStore._insert``, ``_claim``, ``_promote``, ``_fire``).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from contextlib import AbstractContextManager

import attrs

from awa.adapters._fencing import Writes
from awa.adapters.core.fenced import FencedCore
from awa.adapters.core.flow import HeldBackCounts, candidate_window, within_limits
from awa.adapters.core.transaction import RowTransaction
from awa.domain import FirePlan, Job, NewJob, OnConflict, decisions
from awa.domain.unique import Blocked, answer_inserts, blocked_inserts, refuse_blocked

__all__ = ["RowPaths"]


class RowPaths(HeldBackCounts, FencedCore):
    """``StoreCore``'s ``_insert``, ``_claim``, ``_promote`` and ``_fire`` over a
    ``RowTransaction``; a store lists it before ``StoreCore`` among its bases."""

    @abc.abstractmethod
    def _transaction(self, action: str) -> AbstractContextManager[RowTransaction]: ...

    def _insert(self, jobs: Sequence[NewJob], on_conflict: OnConflict) -> list[Job]:
        with self._transaction("inserting jobs") as tx:
            created, blocked = _create(tx, jobs, on_conflict)
        return answer_inserts(len(jobs), created, blocked)

    def _claim(
        self, queue: str, limit: int, deadline_duration_s: float, priority_aging_s: float
    ) -> list[Job]:
        with self._transaction("claiming jobs") as tx:
            if tx.queue_paused(queue):
                return []
            now = tx.now()
            flow = tx.queue_flow(queue)
            per_key = candidate_window(flow)
            candidates = tx.claim_candidates(queue, limit, priority_aging_s, per_key)
            if priority_aging_s:
                candidates.sort(key=lambda job: decisions.claim_order(job, now, priority_aging_s))
            else:
                candidates.sort(key=decisions.PLAIN_CLAIM_ORDER)
            if flow is None:
                chosen = candidates[:limit]
            else:
                chosen = within_limits(
                    tx,
                    queue,
                    flow,
                    candidates if per_key else candidates[:limit],
                    limit,
                    now,
                    priority_aging_s,
                    self._count_held_back,
                )
            claimed = [decisions.claim(job, now, deadline_duration_s) for job in chosen]
            _write_kept(tx, claimed)
            return claimed

    def _promote(self, limit: int) -> list[Job]:
        with self._transaction("promoting jobs") as tx:
            now = tx.now()
            promoted = [decisions.promote(job, now) for job in tx.due_jobs(limit)]
            _write_kept(tx, promoted)
            return promoted

    def _fire(self, plan: FirePlan) -> list[Job] | None:
        with self._transaction("firing a schedule") as tx:
            current = tx.lock_schedules([plan.name]).get(plan.name)
            if current is None or current.paused or current.next_fire_at != plan.expected_next:
                return None  # the compare-and-set failed: another fire moved it on
            moved = attrs.evolve(
                current,
                next_fire_at=plan.following,
                last_fire_at=plan.fires[-1],
                updated_at=tx.now(),
            )
            writes = Writes()
            writes.schedules.append(moved)
            tx.write(writes)
            created, _ = _create(tx, plan.jobs, "skip")
            return created


def _write_kept(tx: RowTransaction, jobs: Sequence[Job]) -> None:
    if jobs:
        writes = Writes()
        for job in jobs:
            writes.keep(job)
        tx.write(writes)


def _create(
    tx: RowTransaction, jobs: Sequence[NewJob], on_conflict: OnConflict
) -> tuple[list[Job], dict[int, Blocked]]:
    """Row 1 for the jobs whose unique key is free (``awa.domain.unique``)."""
    now = tx.now()
    keys = [new.unique_key_at(new.run_at if new.run_at is not None else now) for new in jobs]

    def holder(key: str) -> Job | None:
        locked = tx.lock_unique_holder(key)
        return None if locked is None else locked.job

    blocked = blocked_inserts(keys, holder) if any(keys) else {}
    refuse_blocked(blocked, on_conflict)
    first_id = tx.next_job_id()
    free = (new for index, new in enumerate(jobs) if index not in blocked)
    created = [
        decisions.create_job(new, job_id=first_id + n, now=now) for n, new in enumerate(free)
    ]
    if created:
        tx.insert_jobs(created)
    return created, blocked
