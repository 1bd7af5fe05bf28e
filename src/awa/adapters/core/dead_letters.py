"""The operator's dead-letter verbs (``awa.ports.OperatorStore``): move a job there by hand,
read, restore (row 20) and purge (row 21) entries."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from datetime import datetime

from awa.adapters._fencing import Writes
from awa.adapters.core.fenced import FencedCore, holder_refusing
from awa.adapters.core.transaction import Transaction
from awa.domain import DlqEntry, Job, JobNotFound, UniqueConflict, decisions
from awa.ports.checks import (
    check_before_id,
    check_dlq_filter,
    check_job_id,
    check_limit,
    check_reason,
    check_retry_at,
)

__all__ = ["DeadLetters", "retry_dead_letter"]


class DeadLetters(FencedCore):
    # -- primitives -------------------------------------------------------------------------
    @abc.abstractmethod
    def _list_dlq(
        self, queue: str | None, kind: str | None, limit: int, before_id: int | None
    ) -> list[DlqEntry]:
        """Newest job id first, ids below ``before_id`` when given."""

    @abc.abstractmethod
    def _get_dlq_entry(self, job_id: int) -> DlqEntry | None: ...

    @abc.abstractmethod
    def _purge_dlq(self, queue: str | None, kind: str | None) -> int: ...

    @abc.abstractmethod
    def _purge_dlq_job(self, job_id: int) -> bool:
        """Delete one dead-letter entry; whether there was one."""

    # -- the verbs --------------------------------------------------------------------------
    def move_to_dlq(self, job_id: int, *, reason: str) -> DlqEntry:
        check_job_id(job_id)
        check_reason(reason)
        with self._transaction("moving a job to the dead-letter queue") as tx:
            locked = tx.lock_job(job_id)
            if locked is None:
                raise JobNotFound(job_id)
            entry = decisions.move_to_dlq(locked.job, reason, tx.now())
            writes = Writes()
            writes.dead_letter(job_id, reason)
            tx.write(writes)
            return entry

    def list_dlq(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        limit: int = 100,
        before_id: int | None = None,
    ) -> list[DlqEntry]:
        check_dlq_filter(queue, kind, all=True)
        check_limit(limit)
        return self._list_dlq(queue, kind, limit, check_before_id(before_id))

    def get_dlq_entry(self, job_id: int) -> DlqEntry | None:
        return self._get_dlq_entry(check_job_id(job_id))

    def retry_from_dlq(self, job_id: int, *, run_at: datetime | None = None) -> Job:
        check_job_id(job_id)
        at = check_retry_at(run_at)

        def retry() -> Job:
            with self._transaction("retrying a dead-letter job") as tx:
                return retry_dead_letter(tx, job_id, at)

        return self._rerun_on_key_race(retry)

    def bulk_retry_from_dlq(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        all: bool = False,
        run_at: datetime | None = None,
    ) -> list[Job]:
        check_dlq_filter(queue, kind, all)
        at = check_retry_at(run_at)

        def retry() -> list[Job]:
            with self._transaction("retrying dead-letter jobs") as tx:
                dead = tx.lock_dead_letters(queue, kind)
                return _restore(tx, dead, at, refuse_held=False) if dead else []

        return self._rerun_on_key_race(retry)

    def purge_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        check_dlq_filter(queue, kind, all)
        return self._purge_dlq(queue, kind)

    def purge_dlq_job(self, job_id: int) -> None:
        if not self._purge_dlq_job(check_job_id(job_id)):
            raise JobNotFound(job_id)


def retry_dead_letter(tx: Transaction, job_id: int, run_at: datetime | None) -> Job:
    """Row 20 for one job, inside ``tx``; ``UniqueConflict`` when its key is held."""
    dead = tx.lock_dead_letter(job_id)
    if dead is None:
        raise JobNotFound(job_id)
    return _restore(tx, [dead], run_at, refuse_held=True)[0]


def _restore(
    tx: Transaction, dead: Sequence[Job], run_at: datetime | None, *, refuse_held: bool
) -> list[Job]:
    """Row 20; a job whose key another holds raises (``refuse_held``) or stays put, and so
    does one with a column its store could not read: restoring it writes every column, so it
    would run with what stands in for that column instead of what it holds."""
    now, writes = tx.now(), Writes()
    taken: dict[str, Job] = {}
    for job in dead:
        if job.unreadable:
            if refuse_held:
                raise decisions.unrestorable(job)
            continue
        retried = decisions.operator_retry(job, now, run_at)
        holder = holder_refusing(tx, None, retried, taken)  # a dead letter holds none
        if holder is None:
            writes.restore(retried)
        elif refuse_held:
            raise UniqueConflict(holder.id, holder.kind, holder.state.value)
    if writes:
        tx.write(writes)
    return writes.restored
