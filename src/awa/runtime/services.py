"""The runtime's services. Each ``run_once(now)`` does one bounded batch and never sleeps; it
returns how many seconds until it wants to run again (``None``: only when woken). The
``Scheduler`` owns all waiting, so everything runs under a ``ManualClock`` too.

Each service is given only what it uses: the store's role it calls (``WorkerStore`` for
claims and finishes, the maintenance role for the leader) and the bounded way to call it, the
attempt table, and the counters it moves."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from awa.domain import AwaError, Fail, Job, ValidationError
from awa.domain.claim_sizes import claim_size
from awa.domain.validation import storable_text
from awa.ports import (
    Applied,
    Clock,
    CountsHeldBack,
    Finish,
    MaintenanceStore,
    PartlyWritten,
    QueueStats,
    Rescued,
    Stale,
    SummarizesQueues,
    WorkerStore,
    WriteResult,
)
from awa.runtime.attempt_table import AttemptTable, PendingOutcome
from awa.runtime.attempts import Attempt
from awa.runtime.config import QueueConfig, RuntimeConfig
from awa.runtime.dispatch import Dispatch
from awa.runtime.leading import LeaderService
from awa.runtime.observe import AttemptEnd, Ending, MaintenanceReport, Observers
from awa.runtime.scheduler import Service
from awa.runtime.stats import RuntimeStats
from awa.runtime.store_calls import StoreCalls
from awa.runtime.weighted import SharedSlots

__all__ = [
    "ClaimService",
    "CompletionService",
    "DeadlineService",
    "MaintainedStore",
    "MaintenanceReport",
    "MaintenanceService",
    "QueueClaims",
    "Service",
    "claim_service_names",
]

log = logging.getLogger("awa.runtime")


class MaintainedStore(MaintenanceStore, Protocol):
    """The maintenance role, and the one operator's read its leader makes: the queue counts
    it hands observers on a store that keeps no summary (``SummarizesQueues``)."""

    def queue_stats(self) -> list[QueueStats]: ...


#: the largest share of the maintenance leader's time the queue summary's count may take: the
#: count reads the whole job table, which holds every finished job for the retention period
SUMMARY_SHARE_MAX = 0.05

# claiming ahead (QueueClaims.pace): the shortest window a pace is measured over, the weight
# of the newest round trip in their moving average, and the margin over one round trip's need
PACE_WINDOW_S = 0.05
RTT_WEIGHT = 0.2
AHEAD_MARGIN = 2


class QueueClaims:
    """What the claim services of one queue in this process share (``QueueConfig.claimers``):
    the jobs their claims on the way asked for, and one claim-ahead pace for the queue."""

    def __init__(self, config: QueueConfig, table: AttemptTable) -> None:
        self.config = config
        self._table = table
        self.in_flight = 0  # jobs asked for by claims not yet answered
        self.ahead = 0  # jobs to hold claimed ahead of free slots (``pace``)
        self._paced_at: datetime | None = None
        self._freed_then = 0
        self._round_trip_s: float | None = None  # the claims' round trips, a moving average

    def size(self, batch_max: int) -> int:
        """How many jobs one more claim may ask for (``awa.domain.claim_sizes``)."""
        queue, table = self.config.queue, self._table
        return claim_size(
            slots=self.config.concurrency,
            running=table.running(queue),
            waiting=table.waiting(queue),
            in_flight=self.in_flight,
            ahead=self.ahead,
            batch_max=batch_max,
        )

    def pace(self, asked: datetime, answered: datetime) -> None:
        """Size the claim-ahead: twice as many jobs as slots free up during one claim's round
        trip at the recent pace (the margin covers a round trip slower than the average).
        Short handlers keep a few jobs ready so a freed slot does not wait for the database;
        long ones keep none, so no job waits here while another process could run it. Under
        a manual clock a round trip takes no time, so simulations never claim ahead."""
        round_trip_s = (answered - asked).total_seconds()
        average = self._round_trip_s
        self._round_trip_s = (
            round_trip_s if average is None else average + (round_trip_s - average) * RTT_WEIGHT
        )
        freed = self._table.freed(self.config.queue)
        if self._paced_at is None:
            self._paced_at, self._freed_then = answered, freed
            return
        elapsed_s = (answered - self._paced_at).total_seconds()
        freed_since = freed - self._freed_then
        # back-to-back claims are too close together to measure a pace: wait for a window
        # (or a manual clock that has not moved)
        if elapsed_s <= 0 or (elapsed_s < PACE_WINDOW_S and freed_since < self.config.concurrency):
            return
        pace = freed_since / elapsed_s  # slots freed per second
        wanted = round(AHEAD_MARGIN * pace * self._round_trip_s)
        self.ahead = min(self.config.concurrency, wanted)
        self._paced_at, self._freed_then = answered, freed


def claim_service_names(config: QueueConfig) -> list[str]:
    """The scheduler's names of a queue's claim services: ``claim:<queue>``, then
    ``claim:<queue>#2`` and on (``#`` is in no queue's name)."""
    first = f"claim:{config.queue}"
    return [first, *(f"{first}#{n}" for n in range(2, config.claimers + 1))]


class ClaimService:
    """Claims for one queue, as many jobs as it has free slots, and starts them. A queue with
    ``claimers > 1`` has that many, sharing a ``QueueClaims``: each is a service of its own,
    so their claims' round trips overlap."""

    def __init__(
        self,
        config: QueueConfig,
        store: WorkerStore,
        store_call: StoreCalls,
        table: AttemptTable,
        dispatch: Dispatch,
        observers: Observers,
        *,
        batch_max: int,
        claimed: Callable[[int, int], None],
        clock: Clock,
        shared: SharedSlots | None = None,
        held_back: Callable[[Mapping[str, Mapping[str, int]]], None] | None = None,
        claims: QueueClaims | None = None,
        name: str | None = None,
    ) -> None:
        """``dispatch`` runs claimed jobs, or holds those claimed ahead of a free slot;
        ``claimed(n, ahead)`` follows every claim that took ``n > 0`` jobs, ``ahead`` of them
        held for a slot. With ``shared`` (``global_max_workers``) the queue claims only what
        the shared slots deal it, never ahead. ``held_back`` hears, after each claim, what
        the store's flow limits held back since the last, by queue and reason (a store that
        counts them: ``CountsHeldBack``). ``claims``: what this queue's other claim services
        share with this one (``None``: it is the only one)."""
        self.config = config
        self.name = name or f"claim:{config.queue}"
        self.draining = False
        self._store = store
        self._call = store_call
        self._table = table
        self._start = dispatch.start
        self._admit = dispatch.admit
        self._start_waiting = dispatch.start_waiting
        self.claims = claims or QueueClaims(config, table)
        self._observers = observers
        self._batch_max = batch_max
        self._claimed = claimed
        self._clock = clock
        self._shared = shared
        self._poll_at: datetime | None = None  # weighted: when to look again for work
        # asked once: the store counts what its flow limits held back (awa.claims.throttled)
        self._take_held_back = (
            store.take_held_back
            if isinstance(store, CountsHeldBack) and held_back is not None
            else None
        )
        self._held_back = held_back
        #: the last claim left jobs of the queue that a flow limit held back: a slot an
        #: attempt gives back in the store may let one start (``Runtime._finished``)
        self.throttled = False

    async def run_once(self, now: datetime) -> float | None:
        cfg, table, claims = self.config, self._table, self.claims
        if self.draining:
            return None
        if self._shared is not None:
            return await self._run_shared(self._shared, now)
        # first the jobs claimed ahead, into the slots freed since (a freed slot wakes us)
        while table.running(cfg.queue) < cfg.concurrency and self._start_waiting(cfg.queue):
            pass
        limit = claims.size(self._batch_max)
        if limit == 0:
            return None  # a finishing handler wakes us
        asked = self._clock.now()
        claims.in_flight += limit  # before the round trip: another claimer counts it
        try:
            jobs = await self._claim(limit)
        finally:
            claims.in_flight -= limit
        answered = self._clock.now()  # one reading for the batch, after the round trip
        if cfg.claim_ahead:
            claims.pace(asked, answered)
        if jobs:
            ahead = 0
            for job in jobs:
                if table.running(cfg.queue) < cfg.concurrency:
                    self._start(cfg, job, answered)
                else:
                    self._admit(cfg, job, answered)
                    ahead += 1
            self._claimed(len(jobs), ahead)
        self._heard(jobs, now)
        return 0.0 if len(jobs) == limit else cfg.poll_interval_s

    async def _run_shared(self, shared: SharedSlots, now: datetime) -> float | None:
        """One claim of as many jobs as the shared slots deal this queue, all started at once.
        A queue whose last claim came back short claims again when the store says it has
        jobs or when its poll interval has passed, not each time a slot frees."""
        cfg = self.config
        if self._poll_at is not None and now >= self._poll_at:
            shared.work_arrived(cfg.queue)
        limit = shared.reserve(cfg.queue, self._batch_max)
        if limit == 0:
            if shared.has_work(cfg.queue) or self._poll_at is None:
                return None  # a freed slot wakes us
            return (self._poll_at - now).total_seconds()
        self._poll_at = None
        try:
            jobs = await self._claim(limit)
        except BaseException:
            shared.landed(cfg.queue, limit, None)
            raise
        answered = self._clock.now()
        for job in jobs:
            self._start(cfg, job, answered)
        shared.landed(cfg.queue, limit, len(jobs))
        if jobs:
            self._claimed(len(jobs), 0)
        self._heard(jobs, now)
        if len(jobs) == limit:
            return 0.0
        self._poll_at = now + timedelta(seconds=cfg.poll_interval_s)
        return cfg.poll_interval_s

    async def _claim(self, limit: int) -> list[Job]:
        cfg = self.config
        return await self._call(
            self._store.claim,
            cfg.queue,
            limit=limit,
            deadline_duration_s=cfg.deadline_duration_s,
            priority_aging_s=cfg.priority_aging_interval_s,
        )

    def _heard(self, jobs: Sequence[Job], now: datetime) -> None:
        """Tell the observers of a claim, and hand on what flow limits held back since the
        last (the store's counts cover every queue of the process: whichever claim comes
        first hands them on)."""
        if self._observers:
            self._observers.claimed(self.config.queue, jobs, now)
        if self._take_held_back is not None and self._held_back is not None:
            self.throttled = False
            counts = self._take_held_back()
            if counts:
                self._held_back(counts)


class _Unwritten:
    """An outcome the store did not write (``PartlyWritten``): it goes back to be written."""


_UNWRITTEN = _Unwritten()
#: what became of an outcome: written (``Applied``, ``Stale``), given up (``None``: it could not
#: be stored, maintenance rescues the attempt), or to be written again
_Written = WriteResult | None | _Unwritten


class CompletionService:
    """Writes finished attempts' outcomes, many per statement."""

    name = "complete"

    def __init__(
        self,
        store: WorkerStore,
        store_call: StoreCalls,
        table: AttemptTable,
        stats: RuntimeStats,
        observers: Observers,
        *,
        batch_max: int,
        finished: Callable[[Mapping[str, bool]], None] | None = None,
    ) -> None:
        """``finished`` hears the queues of each batch's written outcomes (their attempts
        gave their slots back in the store), each with whether one of them had an
        ``ordering_key`` (its key's next job may start now)."""
        self._store = store
        self._call = store_call
        self._table = table
        self._stats = stats
        self._observers = observers
        self._batch_max = batch_max
        self._finished = finished

    async def run_once(self, now: datetime) -> float | None:
        batch = self._table.take_finishes(self._batch_max)
        if not batch:
            return None
        partly: list[PartlyWritten] = []
        try:
            results = await self._write([pending.finish for pending in batch], partly)
        except AwaError:  # the database, not an outcome: the whole batch waits for a retry
            self._table.requeue_finishes(batch)
            raise
        # outcomes whose rows another session held: only they wait, the rest is written
        again = [p for p, r in zip(batch, results, strict=True) if r is _UNWRITTEN]
        self._table.requeue_finishes(again)
        self._record(batch, results)
        if partly:
            raise partly[0]
        return 0.0 if self._table.has_finishes() else None

    def _record(self, batch: Sequence[PendingOutcome], results: Sequence[_Written]) -> None:
        """Count and report what the store said about each written outcome."""
        heard = self._observers.heard()  # asked once a batch, not once an attempt
        finished = 0
        queues: dict[str, bool] = {}
        for pending, result in zip(batch, results, strict=True):
            if isinstance(result, Applied):
                finished += 1
                job = result.job
                queues[job.queue] = queues.get(job.queue, False) or job.ordering_key is not None
                ending = Ending.of(result.job.state)
            elif isinstance(result, Stale):
                self._stats.stale_finishes += 1
                log.debug("finish of %s dropped: %s", result.lease, result.reason)
                ending = Ending.STALE
            else:
                continue
            if ending in heard:
                self._observers.attempt_ended(_ended(pending, result))
        self._stats.finished += finished
        if queues and self._finished is not None:
            self._finished(queues)

    async def _write(self, batch: list[Finish], partly: list[PartlyWritten]) -> list[_Written]:
        """Write ``batch``; when the store refuses it as bad input, split it until the bad
        outcome stands alone, so its neighbours are written at once and only it fails. When
        the store wrote only part of it (``PartlyWritten``, noted in ``partly``), the rest
        comes back ``_UNWRITTEN``."""
        try:
            return list(await self._call(self._store.finish, batch))
        except PartlyWritten as partial:
            partly.append(partial)
            return [_UNWRITTEN if result is None else result for result in partial.results]
        except ValidationError as refused:
            if len(batch) == 1:
                return [await self._fail_unstorable(batch[0], refused)]
            half = len(batch) // 2
            first = await self._write(batch[:half], partly)
            return [*first, *await self._write(batch[half:], partly)]

    async def _fail_unstorable(
        self, finish: Finish, refused: ValidationError
    ) -> WriteResult | None:
        """The attempt's outcome cannot be stored: fail the attempt with an error saying why
        (retried like a raised exception), without the buffers that may be the cause."""
        error = storable_text(f"outcome could not be stored: {refused}")
        log.warning("job %s: %s", finish.lease, error)
        try:
            [result] = await self._call(self._store.finish, [Finish(finish.lease, Fail(error))])
        except ValidationError:
            log.error(
                "job %s: even its failure could not be stored; it will be rescued", finish.lease
            )
            return None
        return result


def _ended(pending: PendingOutcome, result: WriteResult) -> AttemptEnd:
    """What the store said about an attempt's outcome, for observers."""
    claimed = pending.record
    written = result.job if isinstance(result, Applied) else None
    if written is None:
        ending, error = Ending.STALE, None
    else:
        ending = Ending.of(written.state)
        recorded = len(written.errors) > len(claimed.errors)
        error = written.errors[-1].error if recorded else None
    return AttemptEnd(
        lease=pending.finish.lease,
        kind=claimed.kind,
        queue=claimed.queue,
        attempt=claimed.attempt,
        max_attempts=claimed.max_attempts,
        ending=ending,
        handler_s=pending.handler_s,
        error=error,
        stale_reason=result.reason if isinstance(result, Stale) else None,
        job=written,
    )


class DeadlineService:
    """Drops async handlers still running shortly after their deadline, freeing the slot;
    maintenance then counts the attempt as ``hard deadline exceeded``."""

    name = "deadlines"

    def __init__(
        self,
        table: AttemptTable,
        drop: Callable[[Attempt], None],
        stats: RuntimeStats,
        *,
        grace_s: float,
    ) -> None:
        self._table = table
        self._drop = drop
        self._stats = stats
        self.grace_s = grace_s

    async def run_once(self, now: datetime) -> float | None:
        next_due: float | None = None
        for attempt in self._table.attempts():
            deadline = attempt.deadline_local  # this process's clock, like now
            if deadline is None or not attempt.is_async or attempt.waiting_callback:
                continue
            overdue_s = (now - deadline).total_seconds() - self.grace_s
            if overdue_s >= 0:
                self._stats.dropped += 1
                self._drop(attempt)
            else:
                next_due = -overdue_s if next_due is None else min(next_due, -overdue_s)
        return next_due


class MaintenanceService(LeaderService):
    """Rescue, promotion and retention, run by one leader among all processes."""

    name = "maintenance"

    _store: MaintainedStore

    def __init__(
        self,
        store: MaintainedStore,
        store_call: StoreCalls,
        config: RuntimeConfig,
        stats: RuntimeStats,
        observers: Observers,
        *,
        owner: str,
        staleness_s: float,
    ) -> None:
        super().__init__(store, store_call, config, stats, owner=owner)
        self._observers = observers
        self.staleness_s = staleness_s
        self.last_report = MaintenanceReport(leader=False)
        #: the leader counts the queues into the store's summary, when the store keeps one
        self.summarizes = (
            isinstance(store, SummarizesQueues) and config.queue_summary_interval_s > 0
        )
        self._next_summary_at: datetime | None = None
        #: how long the last count took, in real seconds (it scans the whole job table)
        self.last_count_s = 0.0

    def summary_spacing_s(self) -> float:
        """Seconds until the next count: the configured interval, or longer when the count
        itself is slow, so that counting takes at most ``SUMMARY_SHARE_MAX`` of the leader's
        time however many finished jobs the table keeps."""
        return max(self.config.queue_summary_interval_s, self.last_count_s / SUMMARY_SHARE_MAX)

    async def run_once(self, now: datetime) -> float | None:
        summarize = self.summarizes and (
            self._next_summary_at is None or now >= self._next_summary_at
        )
        report, rescued, stats = await self._call(self.run_sync, summarize)
        if summarize and report.leader:
            self._next_summary_at = now + timedelta(seconds=self.summary_spacing_s())
        if report.leader != self.last_report.leader:
            self._observers.leadership_changed(self.owner, report.leader)
        self.last_report = report
        self._stats.rescued += report.rescued
        self._observers.maintained(report, rescued)
        if stats is not None:
            self._observers.queues_measured(stats, now)
        return 0.0 if report.more else self.config.maintenance_interval_s

    def run_sync(
        self, summarize: bool = False
    ) -> tuple[MaintenanceReport, Sequence[Rescued], Sequence[QueueStats] | None]:
        """One round on a store thread: lead, rescue, promote, expire; then, when
        ``summarize``, count every queue into the store's summary, and for observers that want
        them, hand them the counts (the leader alone counts, not every worker). A store without
        a summary is read with ``queue_stats()`` each round instead, if an observer wants it."""
        store, cfg, limit = self._store, self.config, self.config.maintenance_batch_max
        if not store.try_lead(self.owner, ttl_s=self.lead_ttl_s):
            return MaintenanceReport(leader=False), [], None
        rescued = store.rescue(staleness_s=self.staleness_s, limit=limit)
        promoted = store.promote(limit=limit)
        deleted = store.delete_finished(
            older_than_s=cfg.finished_retention_s,
            failed_older_than_s=cfg.failed_retention_s,
            limit=limit,
        )
        expired = store.expire_dlq(older_than_s=cfg.dlq_retention_s, limit=limit)
        stats: Sequence[QueueStats] | None = None
        if summarize and isinstance(store, SummarizesQueues):
            started = time.monotonic()
            stats = store.summarize_queues().queues
            self.last_count_s = time.monotonic() - started
        elif self._observers.wants_queue_stats and not self.summarizes:
            stats = store.queue_stats()
        counts = (len(rescued), len(promoted), deleted, expired)
        return MaintenanceReport(True, *counts, more=max(counts) >= limit), rescued, stats

    def resign(self) -> None:
        self._store.release_lead(self.owner)
