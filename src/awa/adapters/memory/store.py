"""The in-memory claim store: a real adapter for tests and simulation.

The lifecycle (argument checks, the fenced-write loop, every decision) is ``StoreCore``'s;
this module holds the jobs and the indexes that let claim, promote and retention look at the
few jobs they need. One lock serialises every verb, so each call is atomic like a transaction.
"""

from __future__ import annotations

import bisect
import itertools
import random
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import attrs

from awa.adapters._core import JobQuery, StoreCore, Transaction, UniqueKeyRace
from awa.adapters._fencing import Locked, Writes
from awa.adapters._presence import WorkerPresence
from awa.adapters._unreadable import TooEarly, TooLate, placeholder
from awa.adapters.memory.faults import FaultHooks, SimulatedCrash
from awa.domain import (
    DlqEntry,
    FirePlan,
    Job,
    JobState,
    Lease,
    NewJob,
    OnConflict,
    ScheduleRecord,
    Unreadable,
    decisions,
    holds_unique_key,
)
from awa.domain.defaults import PRIORITY_RANGE
from awa.domain.rescue import rescue_cause
from awa.domain.retention import RETENTION_OF, Retention
from awa.domain.unique import Blocked, answer_inserts, blocked_inserts, refuse_blocked
from awa.domain.validation import check_seconds
from awa.ports import (
    Applied,
    CallbackResolved,
    CancelRequested,
    Clock,
    Event,
    Finish,
    Heartbeat,
    JobsAvailable,
    QueueSettings,
    QueueStats,
    Stale,
    StaleReason,
    SystemClock,
    UnhandledKind,
    WriteResult,
)
from awa.ports.checks import check_listener
from awa.ports.listing import Home, JobSummary, summarize
from awa.ports.summary import (
    ENDED_WINDOW_S,
    DlqGroup,
    QueueSummary,
    StateGroup,
    build_summary,
)

__all__ = ["MemoryStore"]


_PENDING = frozenset({JobState.SCHEDULED, JobState.AVAILABLE, JobState.RETRYABLE})
_WAITING_FOR_TIME = frozenset({JobState.SCHEDULED, JobState.RETRYABLE})


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


@attrs.define
class _QueueSettings:
    paused: bool = False
    dlq_enabled: bool = False
    finished_retention_s: float | None = None
    dlq_retention_s: float | None = None
    failed_retention_s: float | None = None


@attrs.frozen
class _Counted:
    """The groups ``summarize_queues`` counted, kept until the next count."""

    at: datetime
    window_s: float
    states: tuple[StateGroup, ...]
    dead: tuple[DlqGroup, ...]


class MemoryStore(StoreCore, WorkerPresence):
    """``ClaimStore`` held in process memory. Thread-safe; deterministic given its clock and
    ``rng`` (backoff jitter and callback ids)."""

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        rng: random.Random | None = None,
        faults: FaultHooks | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.rng = self._random = rng if rng is not None else random.Random()
        self.faults = faults if faults is not None else FaultHooks()
        self._lock = threading.RLock()
        self._jobs: dict[int, Job] = {}
        self._dlq: dict[int, DlqEntry] = {}
        self._queues: dict[str, _QueueSettings] = {}
        self._callbacks: dict[str, int] = {}  # pending callback id -> job id
        self._claim_order: dict[str, _SortedKeys] = {}  # queue -> (priority, run_at, id)
        self._due_order = _SortedKeys()  # scheduled and retryable: (run_at, id)
        # terminal, outside the DLQ, by retention: (finalized_at, id)
        self._finished_order = {retention: _SortedKeys() for retention in Retention}
        self._live: set[int] = set()
        self._holders: dict[str, int] = {}  # unique key -> the job holding it
        self._schedules: dict[str, ScheduleRecord] = {}
        self._next_id = 1
        self._leader: tuple[str, datetime] | None = None
        self._workers: dict[str, tuple[dict[str, tuple[str, ...]], datetime]] = {}
        self._listeners: list[Callable[[Event], None]] = []
        self._events: list[Event] = []
        self._depth = 0
        self._summary: _Counted | None = None

    @contextmanager
    def _tx(self) -> Iterator[None]:
        """One atomic step; hints it raised go to listeners after the lock is released."""
        with self._lock:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                events, self._events = (
                    (self._events, []) if self._depth == 0 else ([], self._events)
                )
                listeners = list(self._listeners)
        for event in events:
            for listener in listeners:
                listener(event)

    @contextmanager
    def _transaction(self, action: str) -> Iterator[Transaction]:
        with self._tx():
            yield _MemoryTransaction(self, self.clock.now())

    def _available(self, jobs: Iterable[Job]) -> None:
        for queue in sorted({j.queue for j in jobs if j.state is JobState.AVAILABLE}):
            self._events.append(JobsAvailable(queue))

    def _new_callback_id(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))

    # -- bookkeeping ---------------------------------------------------------------------------
    def _put(self, job: Job) -> None:
        old = self._jobs.get(job.id)
        if old is not None:
            self._unindex(old)
        self._jobs[job.id] = job
        self._index(job)

    def _remove(self, job_id: int) -> Job:
        job = self._jobs.pop(job_id)
        self._unindex(job)
        return job

    def _index(self, job: Job) -> None:
        if holds_unique_key(job) and job.unique_key is not None:
            self._holders[job.unique_key] = job.id
        if job.callback_id is not None:
            self._callbacks[job.callback_id] = job.id
        if job.state in _PENDING:
            order = self._claim_order.setdefault(job.queue, _SortedKeys())
            order.add((job.priority, job.run_at, job.id))
        if job.state in _WAITING_FOR_TIME:
            self._due_order.add((job.run_at, job.id))
        if job.state.is_live:
            self._live.add(job.id)
        if job.finalized_at is not None:  # set exactly when the job is finished
            self._finished_order[RETENTION_OF[job.state]].add((job.finalized_at, job.id))

    def _unindex(self, job: Job) -> None:
        if job.unique_key is not None and self._holders.get(job.unique_key) == job.id:
            del self._holders[job.unique_key]
        if job.callback_id is not None:
            self._callbacks.pop(job.callback_id, None)
        if job.state in _PENDING:
            self._claim_order[job.queue].remove((job.priority, job.run_at, job.id))
        if job.state in _WAITING_FOR_TIME:
            self._due_order.remove((job.run_at, job.id))
        self._live.discard(job.id)
        if job.finalized_at is not None:  # set exactly when the job is finished
            self._finished_order[RETENTION_OF[job.state]].remove((job.finalized_at, job.id))

    def _settings(self, queue: str) -> _QueueSettings:
        return self._queues.setdefault(queue, _QueueSettings())

    def _dlq_enabled(self, queue: str) -> bool:
        settings = self._queues.get(queue)
        return settings is not None and settings.dlq_enabled

    def _retention_cutoffs(
        self, older_than_s: float, retention: str
    ) -> tuple[Callable[[str], datetime], datetime]:
        """The cutoff of each queue (its own ``retention`` setting, else ``older_than_s``
        ago) and the latest of them all, where a walk in time order can stop."""
        now = self.clock.now()
        default = now - timedelta(seconds=older_than_s)
        cutoffs = {
            name: now - timedelta(seconds=seconds)
            for name, settings in self._queues.items()
            if (seconds := getattr(settings, retention)) is not None
        }
        return (lambda queue: cutoffs.get(queue, default)), max([default, *cutoffs.values()])

    def _holder(self, key: str) -> Job | None:
        job_id = self._holders.get(key)
        return None if job_id is None else self._jobs[job_id]

    def _check_unique(self, jobs: Sequence[Job], leaving: Iterable[int] = ()) -> None:
        """The store's own enforcement of unique keys, before anything is written: these jobs
        (new values, replacing their old ones) and the removal of ``leaving`` must not leave
        two jobs holding one key. The core checks first, so this only fires on a bug."""
        holders = dict(self._holders)
        for job_id in [*leaving, *(job.id for job in jobs)]:
            old = self._jobs.get(job_id)
            if old is not None and old.unique_key and holders.get(old.unique_key) == job_id:
                del holders[old.unique_key]
        for job in jobs:
            key = job.unique_key
            if key and holds_unique_key(job) and holders.setdefault(key, job.id) != job.id:
                raise UniqueKeyRace(f"job {job.id} would take the key job {holders[key]} holds")

    # -- what a SQL store meets in a row written by hand ----------------------------------------
    def plant_unreadable(self, job_id: int, column: str, *, too_late: bool = False) -> Job:
        """Make the stored value of a job's ``column`` one its store cannot read back, as a
        SQL store finds a row written by hand, by another version or by a bug: the job holds
        that column's placeholder and names it in ``unreadable``
        (``awa.adapters._unreadable``), where it is or in the dead-letter queue. For the
        contract's tests of what every store does with such a row."""
        error = TooLate("planted") if too_late else TooEarly("planted")
        with self._tx():
            planted = Unreadable(column, "<planted>", str(error))

            def plant(job: Job) -> Job:
                changes = {column: placeholder(column, error)}
                return attrs.evolve(job, unreadable=(*job.unreadable, planted), **changes)

            if job_id in self._dlq:
                entry = self._dlq[job_id]
                self._dlq[job_id] = attrs.evolve(entry, job=plant(entry.job))
                return self._dlq[job_id].job
            job = plant(self._jobs[job_id])
            self._put(job)
            return job

    # -- producers -----------------------------------------------------------------------------
    def _insert(self, jobs: Sequence[NewJob], on_conflict: OnConflict) -> list[Job]:
        with self._tx():
            created, blocked = self._create(jobs, on_conflict)
            return answer_inserts(len(jobs), created, blocked)

    def _create(
        self, jobs: Sequence[NewJob], on_conflict: OnConflict
    ) -> tuple[list[Job], dict[int, Blocked]]:
        """Row 1 for the jobs whose unique key is free, under the caller's ``_tx``."""
        now = self.clock.now()
        keys = [new.unique_key_at(new.run_at if new.run_at is not None else now) for new in jobs]
        blocked = blocked_inserts(keys, self._holder)
        refuse_blocked(blocked, on_conflict)
        created = []
        for index, new in enumerate(jobs):
            if index in blocked:
                continue
            job = decisions.create_job(new, job_id=self._next_id, now=now)
            self._next_id += 1
            self._put(job)
            created.append(job)
        self._available(created)
        return created, blocked

    # -- workers: the memory store's fault hooks sit here --------------------------------------
    def _claim(
        self, queue: str, limit: int, deadline_duration_s: float, priority_aging_s: float
    ) -> list[Job]:
        with self._tx():
            if queue in self._queues and self._queues[queue].paused:
                return []
            now = self.clock.now()
            runnable = self._runnable(queue, now, limit, priority_aging_s)
            claimed = [decisions.claim(job, now, deadline_duration_s) for job in runnable]
            for job in claimed:
                self._put(job)
        if claimed and self.faults.take_crash():
            raise SimulatedCrash([job.lease for job in claimed])
        return claimed

    def _runnable(self, queue: str, now: datetime, limit: int, aging_s: float) -> list[Job]:
        """Jobs in claim order (``decisions.claim_order``). A pending job is runnable once its
        ``run_at`` has come, so within each priority the runnable ones come first, and they
        age in that order too: the first ``limit`` of each priority hold the first ``limit``
        overall, aged or not."""
        order = self._claim_order.get(queue)
        if order is None:
            return []
        found: list[Job] = []
        for priority in PRIORITY_RANGE:
            keys = order.from_prefix((priority,))
            for taken, (key_priority, run_at, job_id) in enumerate(keys):
                if key_priority != priority or run_at > now or taken == limit:
                    break
                found.append(self._jobs[job_id])
        found.sort(key=lambda job: decisions.claim_order(job, now, aging_s))
        return found[:limit]

    def _heartbeat(self, beats: Sequence[Heartbeat]) -> list[WriteResult]:
        """A lost heartbeat (``faults.stall_heartbeats``) never reaches the store; the worker
        hears nothing back to alarm it."""
        with self._tx():
            delivered = [b for b in beats if not self.faults.heartbeat_is_lost(b.lease.job_id)]
            written = iter(super()._heartbeat(delivered))
            results: list[WriteResult] = []
            for beat in beats:
                if self.faults.heartbeat_is_lost(beat.lease.job_id):
                    job = self._jobs.get(beat.lease.job_id)
                    results.append(
                        Applied(job) if job else Stale(beat.lease, StaleReason.NOT_FOUND)
                    )
                else:
                    results.append(next(written))
            return results

    def _finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        """``faults.delay_finishes`` freezes a worker mid-finish until a test lets it go."""
        held = any(self.faults.finish_is_delayed(f.lease.job_id) for f in finishes)
        if held:
            self.faults.hold_finish()
        try:
            return super()._finish(finishes)
        finally:
            if held:
                self.faults.finish_applied()

    # -- maintenance ---------------------------------------------------------------------------
    def _promote(self, limit: int) -> list[Job]:
        with self._tx():
            now = self.clock.now()
            due: list[Job] = []
            for run_at, job_id in self._due_order.from_prefix(()):
                if run_at > now or len(due) == limit:
                    break
                due.append(self._jobs[job_id])
            promoted = [decisions.promote(job, now) for job in due]
            for job in promoted:
                self._put(job)
            self._available(promoted)
            return promoted

    def _delete_finished(self, retention: Retention, older_than_s: float, limit: int) -> int:
        with self._tx():
            cutoff, latest = self._retention_cutoffs(older_than_s, retention.value)
            expired: list[int] = []
            for finalized_at, job_id in self._finished_order[retention].from_prefix(()):
                if finalized_at >= latest or len(expired) == limit:
                    break
                if finalized_at < cutoff(self._jobs[job_id].queue):
                    expired.append(job_id)
            for job_id in expired:
                self._remove(job_id)
            return len(expired)

    def _expire_dlq(self, older_than_s: float, limit: int) -> int:
        with self._tx():
            cutoff, _ = self._retention_cutoffs(older_than_s, "dlq_retention_s")
            expired = [
                e.job.id for e in self._dlq_matching(None, None) if e.dlq_at < cutoff(e.job.queue)
            ][:limit]
            for job_id in expired:
                del self._dlq[job_id]
            return len(expired)

    def _try_lead(self, owner: str, ttl_s: float) -> bool:
        with self._tx():
            now = self.clock.now()
            if self._leader is None or self._leader[0] == owner or self._leader[1] <= now:
                self._leader = (owner, now + timedelta(seconds=ttl_s))
                return True
            return False

    def _release_lead(self, owner: str) -> None:
        with self._tx():
            if self._leader is not None and self._leader[0] == owner:
                self._leader = None

    def _record_worker(self, owner: str, kinds: dict[str, tuple[str, ...]], ttl_s: float) -> None:
        with self._tx():
            now = self.clock.now()
            self._workers = {o: w for o, w in self._workers.items() if w[1] > now}
            self._workers[owner] = (kinds, now + timedelta(seconds=ttl_s))

    def _forget_worker(self, owner: str) -> None:
        with self._tx():
            self._workers.pop(owner, None)

    def _unhandled_kinds(self) -> list[UnhandledKind]:
        with self._tx():
            now = self.clock.now()
            handled = {
                (queue, kind)
                for kinds, expires_at in self._workers.values()
                if expires_at > now
                for queue, names in kinds.items()
                for kind in names
            }
            waiting: dict[tuple[str, str], list[datetime]] = {}
            for job in self._jobs.values():
                key = (job.queue, job.kind)
                if job.state in _PENDING and job.run_at <= now and key not in handled:
                    waiting.setdefault(key, []).append(job.run_at)
            return [
                UnhandledKind(queue, kind, len(run_ats), min(run_ats))
                for (queue, kind), run_ats in sorted(waiting.items())
            ]

    def leader(self) -> str | None:
        """Who leads maintenance right now (for tests and diagnostics)."""
        with self._tx():
            if self._leader is None or self._leader[1] <= self.clock.now():
                return None
            return self._leader[0]

    def snapshot(self) -> tuple[list[Job], list[DlqEntry]]:
        """Every job and every dead-letter entry, unbounded (for tests and simulation)."""
        with self._tx():
            return [self._jobs[i] for i in sorted(self._jobs)], [
                self._dlq[i] for i in sorted(self._dlq)
            ]

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        check_listener(listener)
        with self._tx():
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._tx():
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    # -- operators -----------------------------------------------------------------------------
    def _get_job(self, job_id: int) -> Job | None:
        with self._tx():
            entry = self._dlq.get(job_id)
            return entry.job if entry is not None else self._jobs.get(job_id)

    def _list_jobs(self, query: JobQuery) -> list[Job]:
        with self._tx():
            newest_first = map(self._jobs.__getitem__, sorted(self._jobs, reverse=True))
            jobs = (job for job in newest_first if query.matches(job))
            return list(itertools.islice(jobs, query.limit))

    def _list_job_summaries(
        self, query: JobQuery, home: Home, error_chars: int
    ) -> list[JobSummary]:
        with self._tx():  # the jobs are in memory already: a summary only leaves fields out
            if home == "dlq":
                entries = map(self._dlq.__getitem__, sorted(self._dlq, reverse=True))
                found = (summarize(e.job, e) for e in entries if query.matches(e.job))
            else:
                jobs = map(self._jobs.__getitem__, sorted(self._jobs, reverse=True))
                found = (summarize(job) for job in jobs if query.matches(job))
            return list(itertools.islice(found, query.limit))

    def _count_jobs(self, state: JobState | None, kind: str | None, queue: str | None) -> int:
        with self._tx():
            return sum(1 for _ in _matching(self._jobs.values(), state, kind, queue))

    def _discard_failed(self, queue: str | None, kind: str | None) -> int:
        with self._tx():
            doomed = [
                j.id
                for j in self._jobs.values()
                if j.state is JobState.FAILED
                and (queue is None or j.queue == queue)
                and (kind is None or j.kind == kind)
            ]
            for job_id in doomed:
                self._remove(job_id)
            return len(doomed)

    def _set_queue_paused(self, queue: str, paused: bool) -> None:
        with self._tx():
            self._settings(queue).paused = paused

    def _configure_queue(
        self,
        queue: str,
        dlq_enabled: bool | None,
        finished_retention_s: float | None,
        dlq_retention_s: float | None,
        failed_retention_s: float | None,
    ) -> QueueSettings:
        with self._tx():
            settings = self._settings(queue)
            if dlq_enabled is not None:
                settings.dlq_enabled = dlq_enabled
            if finished_retention_s is not None:
                settings.finished_retention_s = finished_retention_s
            if dlq_retention_s is not None:
                settings.dlq_retention_s = dlq_retention_s
            if failed_retention_s is not None:
                settings.failed_retention_s = failed_retention_s
            return QueueSettings(queue, **attrs.asdict(settings))

    def _queue_stats(self) -> list[QueueStats]:
        with self._tx():
            names = sorted(
                {j.queue for j in self._jobs.values()}
                | {e.job.queue for e in self._dlq.values()}
                | set(self._queues)
            )
            stats = []
            for name in names:
                jobs = [j for j in self._jobs.values() if j.queue == name]
                counts = {state: 0 for state in JobState}
                for job in jobs:
                    counts[job.state] += 1
                settings = self._queues.get(name, _QueueSettings())
                stats.append(
                    QueueStats(
                        queue=name,
                        counts=counts,
                        dlq_depth=sum(1 for e in self._dlq.values() if e.job.queue == name),
                        paused=settings.paused,
                        dlq_enabled=settings.dlq_enabled,
                        oldest_available_at=min(
                            (j.run_at for j in jobs if j.state is JobState.AVAILABLE),
                            default=None,
                        ),
                        finished_retention_s=settings.finished_retention_s,
                        dlq_retention_s=settings.dlq_retention_s,
                        failed_retention_s=settings.failed_retention_s,
                    )
                )
            return stats

    # -- the dead-letter queue -----------------------------------------------------------------
    def _dlq_matching(self, queue: str | None, kind: str | None) -> Iterable[DlqEntry]:
        return (
            e
            for e in sorted(self._dlq.values(), key=lambda e: (e.dlq_at, e.job.id))
            if (queue is None or e.job.queue == queue) and (kind is None or e.job.kind == kind)
        )

    # -- the queue summary (``awa.ports.SummarizesQueues``) ----------------------------------------
    def summarize_queues(self, *, window_s: float = ENDED_WINDOW_S) -> QueueSummary:
        check_seconds("summary window", window_s, allow_zero=False)
        with self._tx():
            now = self.clock.now()

            def ended(at: datetime | None) -> bool:
                return at is not None and now - timedelta(seconds=window_s) < at <= now

            jobs = self._jobs.values()
            counts = Counter((j.queue, j.state) for j in jobs)
            ends = Counter((j.queue, j.state) for j in jobs if ended(j.finalized_at))
            oldest: dict[str, datetime] = {}
            for job in jobs:
                if job.state is JobState.AVAILABLE:
                    oldest[job.queue] = min(job.run_at, oldest.get(job.queue, job.run_at))
            states = tuple(
                StateGroup(
                    queue,
                    state,
                    n,
                    oldest.get(queue) if state is JobState.AVAILABLE else None,
                    ends[queue, state],
                )
                for (queue, state), n in counts.items()
            )
            entries = [((e.job.queue, e.job.kind, e.reason), e.dlq_at) for e in self._dlq.values()]
            depth = Counter(key for key, _ in entries)
            arrived = Counter(key for key, at in entries if ended(at))
            latest: dict[tuple[str, str, str], datetime] = {}
            for key, at in entries:
                latest[key] = max(at, latest.get(key, at))
            dead = tuple(
                DlqGroup(*key, count=n, latest_at=latest[key], ended=arrived[key])
                for key, n in depth.items()
            )
            self._summary = _Counted(now, float(window_s), states, dead)
            summary = self.queue_summary()
            assert summary is not None
            return summary

    def queue_summary(self) -> QueueSummary | None:
        with self._tx():
            counted = self._summary
            if counted is None:
                return None
            settings = [
                QueueSettings(name, **attrs.asdict(queue)) for name, queue in self._queues.items()
            ]
            return build_summary(
                counted.at, counted.window_s, counted.states, counted.dead, settings
            )

    def _list_dlq(
        self, queue: str | None, kind: str | None, limit: int, before_id: int | None
    ) -> list[DlqEntry]:
        with self._tx():
            entries = (
                self._dlq[job_id]
                for job_id in sorted(self._dlq, reverse=True)
                if before_id is None or job_id < before_id
            )
            matching = (
                e
                for e in entries
                if (queue is None or e.job.queue == queue) and (kind is None or e.job.kind == kind)
            )
            return list(itertools.islice(matching, limit))

    def _get_dlq_entry(self, job_id: int) -> DlqEntry | None:
        with self._tx():
            return self._dlq.get(job_id)

    def _purge_dlq(self, queue: str | None, kind: str | None) -> int:
        with self._tx():
            ids = [e.job.id for e in self._dlq_matching(queue, kind)]
            for job_id in ids:
                del self._dlq[job_id]
            return len(ids)

    def _purge_dlq_job(self, job_id: int) -> bool:
        with self._tx():
            return self._dlq.pop(job_id, None) is not None

    # -- periodic schedules --------------------------------------------------------------------
    def _list_schedules(self) -> list[ScheduleRecord]:
        with self._tx():
            return [self._schedules[name] for name in sorted(self._schedules)]

    def _upcoming_schedules(self, limit: int) -> tuple[datetime, list[ScheduleRecord]]:
        with self._tx():
            active = (r for r in self._schedules.values() if not r.paused)
            upcoming = sorted(active, key=lambda r: (r.next_fire_at, r.name))[:limit]
            return self.clock.now(), upcoming

    def _fire(self, plan: FirePlan) -> list[Job] | None:
        with self._tx():
            current = self._schedules.get(plan.name)
            if current is None or current.paused or current.next_fire_at != plan.expected_next:
                return None
            self._schedules[plan.name] = attrs.evolve(
                current,
                next_fire_at=plan.following,
                last_fire_at=plan.fires[-1],
                updated_at=self.clock.now(),
            )
            created, _ = self._create(plan.jobs, "skip")
            return created

    def _remove_schedule(self, name: str) -> bool:
        with self._tx():
            return self._schedules.pop(name, None) is not None


def _matching(
    jobs: Iterable[Job], state: JobState | None, kind: str | None, queue: str | None
) -> Iterator[Job]:
    """``list_jobs``'s filters (``None``: any)."""
    return (
        j
        for j in jobs
        if (state is None or j.state is state)
        and (kind is None or j.kind == kind)
        and (queue is None or j.queue == queue)
    )


class _MemoryTransaction:
    """``Transaction`` on a ``MemoryStore`` whose lock the caller holds: "locking" a row is
    reading it, and a write replaces it."""

    def __init__(self, store: MemoryStore, now: datetime) -> None:
        self._store = store
        self._now = now

    def now(self) -> datetime:
        return self._now

    def _locked(self, job: Job) -> Locked:
        return Locked(job, self._store._dlq_enabled(job.queue))

    def lock_leases(self, leases: Sequence[Lease]) -> dict[Lease, Locked]:
        locked = {}
        for lease in leases:
            job = self._store._jobs.get(lease.job_id)
            if job is not None and job.run_lease == lease.run_lease:
                locked[lease] = self._locked(job)
        return locked

    def lease_states(self, job_ids: Sequence[int]) -> dict[int, tuple[int, JobState]]:
        jobs = self._store._jobs
        return {i: (jobs[i].run_lease, jobs[i].state) for i in job_ids if i in jobs}

    def lock_job(self, job_id: int) -> Locked | None:
        job = self._store._jobs.get(job_id)
        return None if job is None else self._locked(job)

    def lock_dead_letter(self, job_id: int) -> Job | None:
        entry = self._store._dlq.get(job_id)
        return None if entry is None else entry.job

    def lock_dead_letters(self, queue: str | None, kind: str | None) -> list[Job]:
        return [entry.job for entry in self._store._dlq_matching(queue, kind)]

    def lock_callback(self, callback_id: str) -> Locked | None:
        job_id = self._store._callbacks.get(callback_id)
        return None if job_id is None else self._locked(self._store._jobs[job_id])

    def callback_pending(self, callback_id: str) -> bool:
        return callback_id in self._store._callbacks

    def lock_unique_holder(self, key: str) -> Locked | None:
        holder = self._store._holder(key)
        return None if holder is None else self._locked(holder)

    def lock_jobs(
        self,
        states: Sequence[JobState],
        queue: str | None,
        kind: str | None,
        after_id: int,
        limit: int,
    ) -> list[Locked]:
        jobs = (self._store._jobs[job_id] for job_id in sorted(self._store._jobs))
        matching = (
            self._locked(j)
            for j in jobs
            if j.id > after_id
            and j.state in states
            and (queue is None or j.queue == queue)
            and (kind is None or j.kind == kind)
        )
        return list(itertools.islice(matching, limit))

    def lock_schedules(self, names: Sequence[str]) -> dict[str, ScheduleRecord]:
        found = (self._store._schedules.get(name) for name in names)
        return {record.name: record for record in found if record is not None}

    def rescue_candidates(self, staleness_s: float, limit: int) -> list[Locked]:
        found: list[Locked] = []
        for job_id in sorted(self._store._live):
            if len(found) >= limit:
                break
            job = self._store._jobs[job_id]
            if rescue_cause(job, self._now, staleness_s) is not None:
                found.append(self._locked(job))
        return found

    def write(self, writes: Writes) -> None:
        store = self._store
        store._check_unique([*writes.jobs.values(), *writes.restored], writes.dead_letters)
        for record in writes.schedules:
            store._schedules[record.name] = record
        store._events.extend(CancelRequested(lease) for lease in writes.cancelled)
        store._events.extend(CallbackResolved(lease) for lease in writes.answered)
        for job in writes.jobs.values():
            store._put(job)
        for job_id, reason in writes.dead_letters.items():
            store._dlq[job_id] = DlqEntry(
                job=store._remove(job_id), reason=reason, dlq_at=self._now
            )
        for job in writes.restored:
            del store._dlq[job.id]
            store._put(job)
        store._events.extend(JobsAvailable(queue) for queue in writes.available_queues())
