"""``RowTransaction`` on the memory store's table, under the store's lock: "locking" a row is
reading it, and a write replaces it."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from datetime import datetime

from awa.adapters._fencing import Locked, Writes, available_queues
from awa.adapters.core import JobBatch, QueueFlow
from awa.adapters.memory.table import MemoryTable
from awa.domain import DlqEntry, Job, JobState, Lease, ScheduleRecord
from awa.domain.flow import Bucket
from awa.domain.rescue import rescue_cause
from awa.ports import CallbackResolved, CancelRequested, JobsAvailable

__all__ = ["MemoryTransaction"]


class MemoryTransaction:
    """One atomic step on ``table``, whose lock the caller holds, at ``now``."""

    def __init__(self, table: MemoryTable, now: datetime) -> None:
        self._table = table
        self._now = now

    def now(self) -> datetime:
        return self._now

    def _locked(self, job: Job) -> Locked:
        return Locked(job, self._table.dlq_enabled(job.queue))

    # -- locks ----------------------------------------------------------------------------------
    def lock_leases(self, leases: Sequence[Lease]) -> dict[Lease, Locked]:
        locked = {}
        for lease in leases:
            job = self._table.jobs.get(lease.job_id)
            if job is not None and job.run_lease == lease.run_lease:
                locked[lease] = self._locked(job)
        return locked

    def lease_states(self, job_ids: Sequence[int]) -> dict[int, tuple[int, JobState]]:
        jobs = self._table.jobs
        return {i: (jobs[i].run_lease, jobs[i].state) for i in job_ids if i in jobs}

    def lock_job(self, job_id: int) -> Locked | None:
        job = self._table.jobs.get(job_id)
        return None if job is None else self._locked(job)

    def lock_dead_letter(self, job_id: int) -> Job | None:
        entry = self._table.dlq.get(job_id)
        return None if entry is None else entry.job

    def lock_dead_letters(self, queue: str | None, kind: str | None) -> list[Job]:
        return [entry.job for entry in self._table.dlq_matching(queue, kind)]

    def lock_callback(self, callback_id: str) -> Locked | None:
        job_id = self._table.callbacks.get(callback_id)
        return None if job_id is None else self._locked(self._table.jobs[job_id])

    def callback_pending(self, callback_id: str) -> bool:
        return callback_id in self._table.callbacks

    def lock_unique_holder(self, key: str) -> Locked | None:
        holder = self._table.holder(key)
        return None if holder is None else self._locked(holder)

    def lock_jobs(self, batch: JobBatch) -> list[Locked]:
        jobs = (self._table.jobs[job_id] for job_id in sorted(self._table.jobs))
        matching = (self._locked(job) for job in jobs if batch.matches(job))
        return list(itertools.islice(matching, batch.limit))

    def lock_schedules(self, names: Sequence[str]) -> dict[str, ScheduleRecord]:
        found = (self._table.schedules.get(name) for name in names)
        return {record.name: record for record in found if record is not None}

    def rescue_candidates(self, staleness_s: float, limit: int) -> list[Locked]:
        found: list[Locked] = []
        for job_id in sorted(self._table.live):
            if len(found) >= limit:
                break
            job = self._table.jobs[job_id]
            if rescue_cause(job, self._now, staleness_s) is not None:
                found.append(self._locked(job))
        return found

    # -- what the core's own insert, claim and promote read -------------------------------------
    def queue_paused(self, queue: str) -> bool:
        return self._table.settings(queue).paused

    def queue_flow(self, queue: str) -> QueueFlow | None:
        limits = self._table.settings(queue).flow_limits
        if limits.is_unlimited:
            return None
        cursors = self._table.turn_cursors  # the store's lock is held
        return QueueFlow(
            limits, self._table.buckets.get(queue), cursors.get(queue), queue in cursors
        )

    def live_attempts(self, queue: str) -> int:
        return self._table.live_attempts(queue)

    def keep_bucket(self, queue: str, bucket: Bucket) -> None:
        self._table.buckets[queue] = bucket

    def live_by_key(self, queue: str) -> dict[str, int]:
        return self._table.live_by_key(queue)

    def key_buckets(self, queue: str, keys: Sequence[str]) -> dict[str, Bucket]:
        stored = self._table.key_buckets
        return {key: stored[(queue, key)] for key in keys if (queue, key) in stored}

    def keep_key_buckets(self, queue: str, buckets: Mapping[str, Bucket]) -> None:
        for key, bucket in buckets.items():
            self._table.key_buckets[(queue, key)] = bucket

    def keep_turn_cursor(self, queue: str, key: str | None) -> None:
        self._table.turn_cursors[queue] = key

    def claim_candidates(
        self, queue: str, limit: int, priority_aging_s: float, per_key: bool = False
    ) -> list[Job]:
        return self._table.runnable(queue, self._now, limit, per_key)

    def due_jobs(self, limit: int) -> list[Job]:
        return self._table.due(self._now, limit)

    def next_job_id(self) -> int:
        return self._table.next_id

    # -- writes ---------------------------------------------------------------------------------
    def insert_jobs(self, jobs: Sequence[Job]) -> None:
        table = self._table
        for job in jobs:
            table.put(job)
        table.next_id = jobs[-1].id + 1
        table.events.extend(JobsAvailable(queue) for queue in available_queues(jobs))

    def write(self, writes: Writes) -> None:
        table = self._table
        table.check_unique([*writes.jobs.values(), *writes.restored], writes.dead_letters)
        for record in writes.schedules:
            table.schedules[record.name] = record
        table.events.extend(CancelRequested(lease) for lease in writes.cancelled)
        table.events.extend(CallbackResolved(lease) for lease in writes.answered)
        for job in writes.jobs.values():
            table.put(job)
        for job_id, reason in writes.dead_letters.items():
            table.dlq[job_id] = DlqEntry(job=table.remove(job_id), reason=reason, dlq_at=self._now)
        for job in writes.restored:
            del table.dlq[job.id]
            table.put(job)
        table.events.extend(JobsAvailable(queue) for queue in writes.available_queues())
