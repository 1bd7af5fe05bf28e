"""The memory store's tables: the jobs and the indexes that let claim, promote and retention
look at the few jobs they need, the dead-letter queue, the schedules, the queue settings, the
leader and the workers. ``MemoryStore`` and its transaction share one ``MemoryTable``; the
store's lock guards it."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

from awa.adapters.core import UniqueKeyRace
from awa.domain import DlqEntry, Job, JobState, ScheduleRecord, holds_unique_key
from awa.domain.defaults import PRIORITY_RANGE
from awa.domain.flow import Bucket, QueueKey
from awa.domain.retention import RETENTION_OF, Retention
from awa.ports import Event, QueueSettings

__all__ = ["PENDING", "MemoryTable"]

#: the states a job waits in to be claimed
PENDING = frozenset({JobState.SCHEDULED, JobState.AVAILABLE, JobState.RETRYABLE})
_WAITING_FOR_TIME = frozenset({JobState.SCHEDULED, JobState.RETRYABLE})
#: the states whose jobs keep their ordering key's turn: not yet finished
_UNFINISHED = frozenset(state for state in JobState if not state.is_terminal)


class _SortedKeys:
    """Keys kept in order with ``bisect``: the indexes that let claim, promote and retention
    look at the few jobs they need instead of every job (the simulation holds thousands)."""

    def __init__(self) -> None:
        self.keys: list[tuple[Any, ...]] = []

    def add(self, key: tuple[Any, ...]) -> None:
        bisect.insort(self.keys, key)

    def remove(self, key: tuple[Any, ...]) -> None:
        """Remove ``key``, which ``add`` put in (a job leaves an index it was put in)."""
        del self.keys[bisect.bisect_left(self.keys, key)]

    def from_prefix(self, prefix: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
        """Keys from the first one starting with ``prefix`` onwards (a copy-free walk)."""
        at = bisect.bisect_left(self.keys, prefix)
        while at < len(self.keys):
            yield self.keys[at]
            at += 1


class MemoryTable:
    """Every row the memory store holds, and its indexes kept in step with the jobs."""

    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}
        self.dlq: dict[int, DlqEntry] = {}
        self.queues: dict[str, QueueSettings] = {}
        self.buckets: dict[str, Bucket] = {}  # a rate-limited queue's bucket, as claims left it
        self.key_buckets: dict[QueueKey, Bucket] = {}  # the same per concurrency key
        self.turn_cursors: dict[str, str | None] = {}  # a keyed queue's last turn
        self.callbacks: dict[str, int] = {}  # pending callback id -> job id
        self.schedules: dict[str, ScheduleRecord] = {}
        self.next_id = 1
        self.leader: tuple[str, datetime] | None = None
        self.workers: dict[str, tuple[dict[str, tuple[str, ...]], datetime]] = {}
        self.events: list[Event] = []  # hints raised, sent once the outermost step ends
        self._claim_order: dict[str, _SortedKeys] = {}  # queue -> (priority, run_at, id)
        self._due_order = _SortedKeys()  # scheduled and retryable: (run_at, id)
        # terminal, outside the DLQ, by retention: (finalized_at, id)
        self._finished_order = {retention: _SortedKeys() for retention in Retention}
        self.live: set[int] = set()
        # (queue, ordering_key) -> the ids of its unfinished jobs, and its live attempts
        self._ordering: dict[QueueKey, set[int]] = {}
        self._ordering_live: dict[QueueKey, int] = {}
        self._holders: dict[str, int] = {}  # unique key -> the job holding it

    # -- jobs and their indexes ---------------------------------------------------------------
    def put(self, job: Job) -> None:
        old = self.jobs.get(job.id)
        if old is not None:
            self._unindex(old)
        self.jobs[job.id] = job
        self._index(job)

    def remove(self, job_id: int) -> Job:
        job = self.jobs.pop(job_id)
        self._unindex(job)
        return job

    def _index(self, job: Job) -> None:
        if holds_unique_key(job) and job.unique_key is not None:
            self._holders[job.unique_key] = job.id
        if job.callback_id is not None:
            self.callbacks[job.callback_id] = job.id
        if job.state in PENDING:
            order = self._claim_order.setdefault(job.queue, _SortedKeys())
            order.add((job.priority, job.run_at, job.id))
        if job.state in _WAITING_FOR_TIME:
            self._due_order.add((job.run_at, job.id))
        if job.state.is_live:
            self.live.add(job.id)
        if job.finalized_at is not None:  # set exactly when the job is finished
            self._finished_order[RETENTION_OF[job.state]].add((job.finalized_at, job.id))
        if job.ordering_key is not None and job.state in _UNFINISHED:
            key = (job.queue, job.ordering_key)
            self._ordering.setdefault(key, set()).add(job.id)
            if job.state.is_live:
                self._ordering_live[key] = self._ordering_live.get(key, 0) + 1

    def _unindex(self, job: Job) -> None:
        if job.unique_key is not None and self._holders.get(job.unique_key) == job.id:
            del self._holders[job.unique_key]
        if job.callback_id is not None:
            self.callbacks.pop(job.callback_id, None)
        if job.state in PENDING:
            self._claim_order[job.queue].remove((job.priority, job.run_at, job.id))
        if job.state in _WAITING_FOR_TIME:
            self._due_order.remove((job.run_at, job.id))
        self.live.discard(job.id)
        if job.finalized_at is not None:  # set exactly when the job is finished
            self._finished_order[RETENTION_OF[job.state]].remove((job.finalized_at, job.id))
        if job.ordering_key is not None and job.state in _UNFINISHED:
            key = (job.queue, job.ordering_key)
            ids = self._ordering[key]
            ids.discard(job.id)
            if not ids:
                del self._ordering[key]
            if job.state.is_live:
                self._ordering_live[key] -= 1
                if not self._ordering_live[key]:
                    del self._ordering_live[key]

    def runnable(self, queue: str, now: datetime, limit: int, per_key: bool = False) -> list[Job]:
        """The first ``limit`` runnable jobs of each priority whose ordering key is free
        (``ordering_free``); with ``per_key``, the first ``limit`` of each priority and
        ``concurrency_key``. A pending job is runnable once its ``run_at`` has come, so within
        each priority the runnable ones come first, and they age in that order too: these
        hold the first ``limit`` in claim order (of each key), aged or not."""
        order = self._claim_order.get(queue)
        if order is None:
            return []
        found: list[Job] = []
        for priority in PRIORITY_RANGE:
            taken: dict[str | None, int] = {}
            for key_priority, run_at, job_id in order.from_prefix((priority,)):
                if key_priority != priority or run_at > now:
                    break
                job = self.jobs[job_id]
                group = job.concurrency_key if per_key else None
                if taken.get(group, 0) == limit:
                    if per_key:
                        continue
                    break
                if self.ordering_free(job):
                    taken[group] = taken.get(group, 0) + 1
                    found.append(job)
        return found

    def ordering_free(self, job: Job) -> bool:
        """THE ORDERING FILTER (``RowTransaction.claim_candidates``): the job has no ordering
        key, or it is its key's head (lowest unfinished id) and no attempt of the key is live."""
        if job.ordering_key is None:
            return True
        key = (job.queue, job.ordering_key)
        return key not in self._ordering_live and min(self._ordering[key]) == job.id

    def due(self, now: datetime, limit: int) -> list[Job]:
        """Up to ``limit`` scheduled and retryable jobs whose ``run_at`` has come, in
        ``(run_at, id)`` order."""
        due: list[Job] = []
        for run_at, job_id in self._due_order.from_prefix(()):
            if run_at > now or len(due) == limit:
                break
            due.append(self.jobs[job_id])
        return due

    def expired(
        self, retention: Retention, now: datetime, older_than_s: float, limit: int
    ) -> list[int]:
        """Up to ``limit`` finished jobs past their queue's ``retention`` (``older_than_s``
        where it has none), oldest ``finalized_at`` first."""
        cutoff, latest = self.retention_cutoffs(now, older_than_s, retention.value)
        expired: list[int] = []
        for finalized_at, job_id in self._finished_order[retention].from_prefix(()):
            if finalized_at >= latest or len(expired) == limit:
                break
            if finalized_at < cutoff(self.jobs[job_id].queue):
                expired.append(job_id)
        return expired

    # -- unique keys --------------------------------------------------------------------------
    def holder(self, key: str) -> Job | None:
        job_id = self._holders.get(key)
        return None if job_id is None else self.jobs[job_id]

    def check_unique(self, jobs: Sequence[Job], leaving: Iterable[int] = ()) -> None:
        """The store's own enforcement of unique keys, before anything is written: these jobs
        (new values, replacing their old ones) and the removal of ``leaving`` must not leave
        two jobs holding one key. The core checks first, so this only fires on a bug."""
        if not any(job.unique_key for job in jobs):  # only a job with a key can take one
            return
        holders = dict(self._holders)
        for job_id in [*leaving, *(job.id for job in jobs)]:
            old = self.jobs.get(job_id)
            if old is not None and old.unique_key and holders.get(old.unique_key) == job_id:
                del holders[old.unique_key]
        for job in jobs:
            key = job.unique_key
            if key and holds_unique_key(job) and holders.setdefault(key, job.id) != job.id:
                raise UniqueKeyRace(f"job {job.id} would take the key job {holders[key]} holds")

    # -- queue settings and the dead-letter queue ---------------------------------------------
    def settings(self, queue: str) -> QueueSettings:
        return self.queues.get(queue) or QueueSettings(queue)

    def live_attempts(self, queue: str) -> int:
        return sum(1 for job_id in self.live if self.jobs[job_id].queue == queue)

    def live_by_key(self, queue: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for job_id in self.live:
            job = self.jobs[job_id]
            if job.queue == queue and job.concurrency_key is not None:
                counts[job.concurrency_key] = counts.get(job.concurrency_key, 0) + 1
        return counts

    def dlq_enabled(self, queue: str) -> bool:
        settings = self.queues.get(queue)
        return settings is not None and settings.dlq_enabled

    def retention_cutoffs(
        self, now: datetime, older_than_s: float, retention: str
    ) -> tuple[Callable[[str], datetime], datetime]:
        """The cutoff of each queue (its own ``retention`` setting, else ``older_than_s``
        ago) and the latest of them all, where a walk in time order can stop."""
        default = now - timedelta(seconds=older_than_s)
        cutoffs = {
            name: now - timedelta(seconds=seconds)
            for name, settings in self.queues.items()
            if (seconds := getattr(settings, retention)) is not None
        }
        return (lambda queue: cutoffs.get(queue, default)), max([default, *cutoffs.values()])

    def dlq_matching(self, queue: str | None, kind: str | None) -> Iterator[DlqEntry]:
        """Matching dead-letter entries in ``(dlq_at, id)`` order."""
        return (
            e
            for e in sorted(self.dlq.values(), key=lambda e: (e.dlq_at, e.job.id))
            if (queue is None or e.job.queue == queue) and (kind is None or e.job.kind == kind)
        )
