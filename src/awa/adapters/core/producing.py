"""The producer's verbs (``awa.ports.ProducerStore``): enqueue jobs, cancel one by its key."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from awa.adapters.core.fenced import FencedCore, cancel_locked
from awa.domain import Job, NewJob, OnConflict
from awa.ports.checks import check_insert, check_unique_job

__all__ = ["Producing"]


class Producing(FencedCore):
    @abc.abstractmethod
    def _insert(self, jobs: Sequence[NewJob], on_conflict: OnConflict) -> list[Job]:
        """Row 1 (``decisions.create_job``'s values) for a non-empty batch, ids in order, with
        the unique rules of ``awa.domain.unique``: ``blocked_inserts``, then
        ``refuse_blocked`` (nothing inserted) and ``answer_inserts``
        (``awa.adapters.core.row_paths`` writes it over a ``RowTransaction``)."""

    def insert(self, jobs: Sequence[NewJob], *, on_conflict: OnConflict = "raise") -> list[Job]:
        mode = check_insert(jobs, on_conflict)
        return self._insert(jobs, mode) if jobs else []

    def cancel_by_unique_key(self, job: NewJob) -> Job | None:
        check_unique_job(job)
        with self._transaction("cancelling by unique key") as tx:
            now = tx.now()
            key = job.unique_key_at(job.run_at if job.run_at is not None else now)
            locked = tx.lock_unique_holder(key) if key is not None else None
            return None if locked is None else cancel_locked(tx, [locked])[0]
