"""``StoreCore``: the ``ClaimStore`` port written once, over a store's primitives.

Every public verb here checks its arguments first (``awa.ports.checks``), then either hands
the work to one primitive the adapter supplies (``_insert``, ``_claim``, reads, settings) or
runs the lifecycle itself inside one ``Transaction`` of the adapter's: lock the rows, let the
domain decide (``awa.domain.decisions``), write the decided rows back. Adapters hold storage,
not decisions: they supply "lock these rows" and "write these rows" (``Transaction``) and the
few statements that are simple enough to run as one (``docs/store-adapters.md``).

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
from datetime import datetime
from typing import Protocol, TypeVar

import attrs

from awa.adapters._fencing import Decide, Locked, Writes, fence, stale_results
from awa.domain import (
    CallbackNotFound,
    DatabaseError,
    DlqEntry,
    FirePlan,
    Job,
    JobNotFound,
    JobState,
    Lease,
    NewJob,
    OnConflict,
    RandomSource,
    Resolution,
    Schedule,
    ScheduleNotFound,
    ScheduleRecord,
    UniqueConflict,
    ValidationError,
    decisions,
    periodic,
    retakes_unique_key,
)
from awa.domain.defaults import CALLBACK_TIMEOUT_S, DEADLINE_S, STALENESS_S
from awa.domain.rescue import rescue_cause
from awa.domain.retention import Retention
from awa.domain.validation import check_flag, check_queue, check_seconds
from awa.ports import (
    BATCH_SIZE_MAX,
    Finish,
    FireRound,
    Heartbeat,
    QueueSettings,
    QueueStats,
    Rescued,
    WriteResult,
)
from awa.ports.checks import (
    check_before_id,
    check_bulk_filter,
    check_callback_id,
    check_claim,
    check_dlq_filter,
    check_finishes,
    check_fire_plan,
    check_heartbeats,
    check_home,
    check_insert,
    check_job_id,
    check_leases,
    check_limit,
    check_list_filter,
    check_owner,
    check_queue_settings,
    check_reason,
    check_register_callback,
    check_resolution,
    check_retention,
    check_retry_at,
    check_schedule_name,
    check_schedules,
    check_unique_job,
)
from awa.ports.listing import LAST_ERROR_CHARS_MAX, Home, JobSummary, cut_error

__all__ = ["KEY_RACE_RERUNS", "JobQuery", "StoreCore", "Transaction", "UniqueKeyRace"]

R = TypeVar("R")
#: how often a verb runs again when concurrent inserts keep taking the key it retakes
KEY_RACE_RERUNS = 5


class UniqueKeyRace(Exception):
    """A store's unique-key enforcement refused a write the core had checked: a concurrent
    transaction took the key in between. Nothing was written; the core runs the verb again."""


@attrs.frozen
class JobQuery:
    """``list_jobs``'s checked filters, as one value an adapter's ``_list_jobs`` reads: the
    matching jobs newest id first, ids below ``before_id`` when given, at most ``limit``."""

    state: JobState | None
    kind: str | None
    queue: str | None
    tag: str | None
    before_id: int | None
    limit: int

    def matches(self, job: Job) -> bool:
        """Whether ``job`` passes the filters (the limit and order are the caller's)."""
        return (
            (self.state is None or job.state is self.state)
            and (self.kind is None or job.kind == self.kind)
            and (self.queue is None or job.queue == self.queue)
            and (self.tag is None or self.tag in job.tags)
            and (self.before_id is None or job.id < self.before_id)
        )


class Transaction(Protocol):
    """One atomic unit of a store's work: what it locks stays locked until it ends, and what
    it writes becomes visible (and its hints are sent) all at once when it commits."""

    def now(self) -> datetime:
        """The transaction's time, on the store's clock."""
        ...

    def lock_leases(self, leases: Sequence[Lease]) -> dict[Lease, Locked]:
        """THE LEASE GUARD: lock the jobs whose ``(id, run_lease)`` is among ``leases``; a
        lease with no entry owns nothing. The state half of the guard is the domain's: the
        transition table refuses a move from a state that is not live (``Stale``)."""
        ...

    def lease_states(self, job_ids: Sequence[int]) -> dict[int, tuple[int, JobState]]:
        """``(run_lease, state)`` of these jobs (missing: not among the jobs any more)."""
        ...

    def lock_job(self, job_id: int) -> Locked | None:
        """Lock a job outside the dead-letter queue."""
        ...

    def lock_dead_letter(self, job_id: int) -> Job | None:
        """Lock a dead-lettered job."""
        ...

    def lock_dead_letters(self, queue: str | None, kind: str | None) -> list[Job]:
        """Lock every matching dead-lettered job, in ``(dlq_at, id)`` order."""
        ...

    def lock_callback(self, callback_id: str) -> Locked | None:
        """Lock the job whose pending callback this is."""
        ...

    def callback_pending(self, callback_id: str) -> bool: ...

    def lock_unique_holder(self, key: str) -> Locked | None:
        """Lock the job that holds unique key ``key`` (``awa.domain.holds_unique_key``)."""
        ...

    def lock_jobs(
        self,
        states: Sequence[JobState],
        queue: str | None,
        kind: str | None,
        after_id: int,
        limit: int,
    ) -> list[Locked]:
        """Lock up to ``limit`` jobs outside the dead-letter queue in one of ``states`` (and
        ``queue``, ``kind`` when given) whose id is above ``after_id``, in id order."""
        ...

    def lock_schedules(self, names: Sequence[str]) -> dict[str, ScheduleRecord]:
        """Lock the schedules of these names that exist."""
        ...

    def rescue_candidates(self, staleness_s: float, limit: int) -> list[Locked]:
        """Lock up to ``limit`` live jobs, in id order, for which ``rescue_cause`` gives a
        cause at ``now()``: heartbeat older than ``staleness_s``, deadline or callback timeout
        passed."""
        ...

    def write(self, writes: Writes) -> None:
        """Write the decided jobs back, move the dead letters (with ``now()`` as ``dlq_at``),
        put restored jobs back, upsert the schedules, and send the hints: cancels, answered
        callbacks, and one wake-up per queue that got runnable jobs. A restored or retried job
        that retakes a unique key someone took meanwhile raises ``UniqueKeyRace``."""
        ...


class StoreCore(abc.ABC):
    """A ``ClaimStore`` whose verbs are written once; subclasses supply the primitives."""

    #: the backoff jitter's source (seeded in tests and simulation)
    rng: RandomSource

    # -- primitives -------------------------------------------------------------------------
    @abc.abstractmethod
    def _transaction(self, action: str) -> AbstractContextManager[Transaction]:
        """One transaction; ``action`` names it in errors ("finishing jobs failed: ...")."""

    @abc.abstractmethod
    def _new_callback_id(self) -> str: ...

    @abc.abstractmethod
    def _insert(self, jobs: Sequence[NewJob], on_conflict: OnConflict) -> list[Job]:
        """Row 1 (``decisions.create_job``'s values) for a non-empty batch, ids in order, with
        the unique rules of ``awa.domain.unique``: ``blocked_inserts``, then
        ``refuse_blocked`` (nothing inserted) and ``answer_inserts``."""

    @abc.abstractmethod
    def _claim(
        self, queue: str, limit: int, deadline_duration_s: float, priority_aging_s: float
    ) -> list[Job]:
        """Row 3 (``decisions.claim``'s values), in ``decisions.claim_order``."""

    @abc.abstractmethod
    def _promote(self, limit: int) -> list[Job]:
        """Row 2 (``decisions.promote``) for due jobs, in ``(run_at, id)`` order."""

    @abc.abstractmethod
    def _delete_finished(self, retention: Retention, older_than_s: float, limit: int) -> int:
        """Jobs in ``retained_states(retention)`` past their queue's ``retention.value``
        setting (``older_than_s`` where the queue has none), oldest ``finalized_at`` first."""

    @abc.abstractmethod
    def _expire_dlq(self, older_than_s: float, limit: int) -> int:
        """Dead-letter entries past their queue's ``dlq_retention_s`` (``older_than_s`` where
        the queue has none), oldest ``dlq_at`` first."""

    @abc.abstractmethod
    def _try_lead(self, owner: str, ttl_s: float) -> bool: ...

    @abc.abstractmethod
    def _release_lead(self, owner: str) -> None: ...

    @abc.abstractmethod
    def _get_job(self, job_id: int) -> Job | None:
        """From whichever home holds it."""

    @abc.abstractmethod
    def _list_jobs(self, query: JobQuery) -> list[Job]:
        """The jobs ``query`` matches, newest id first, at most ``query.limit``."""

    @abc.abstractmethod
    def _list_job_summaries(
        self, query: JobQuery, home: Home, error_chars: int
    ) -> list[JobSummary]:
        """The jobs of ``home`` that ``query`` matches, newest id first, at most
        ``query.limit``, as summaries read without the heavy columns (args, metadata,
        progress, the error history): ``last_error`` holds at least the first
        ``error_chars`` characters of the last error's text (the core cuts the rest)."""

    @abc.abstractmethod
    def _discard_failed(self, queue: str | None, kind: str | None) -> int:
        """Delete the matching failed jobs outside the dead-letter queue; how many."""

    @abc.abstractmethod
    def _count_jobs(self, state: JobState | None, kind: str | None, queue: str | None) -> int: ...

    @abc.abstractmethod
    def _set_queue_paused(self, queue: str, paused: bool) -> None:
        """Resuming also wakes the queue's workers."""

    @abc.abstractmethod
    def _configure_queue(
        self,
        queue: str,
        dlq_enabled: bool | None,
        finished_retention_s: float | None,
        dlq_retention_s: float | None,
        failed_retention_s: float | None,
    ) -> QueueSettings:
        """Store each setting that is not ``None`` (creating the queue's settings if it has
        none yet) and return them all, in one atomic step."""

    @abc.abstractmethod
    def _queue_stats(self) -> list[QueueStats]: ...

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

    @abc.abstractmethod
    def _list_schedules(self) -> list[ScheduleRecord]:
        """Every schedule, by name."""

    @abc.abstractmethod
    def _upcoming_schedules(self, limit: int) -> tuple[datetime, list[ScheduleRecord]]:
        """The store's time, and up to ``limit`` unpaused schedules, earliest next fire first."""

    @abc.abstractmethod
    def _fire(self, plan: FirePlan) -> list[Job] | None:
        """Atomically: move the schedule named ``plan.name`` from ``plan.expected_next`` to
        ``plan.following`` (with ``last_fire_at`` the last of ``plan.fires``) if it is still
        there and not paused, and only then insert ``plan.jobs`` (row 1), skipping a job whose
        unique key is held. ``None`` when the compare-and-set failed."""

    @abc.abstractmethod
    def _remove_schedule(self, name: str) -> bool:
        """Delete a schedule; whether there was one."""

    # -- the fenced-write loop --------------------------------------------------------------
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

    # -- producers --------------------------------------------------------------------------
    def insert(self, jobs: Sequence[NewJob], *, on_conflict: OnConflict = "raise") -> list[Job]:
        mode = check_insert(jobs, on_conflict)
        return self._insert(jobs, mode) if jobs else []

    def cancel_by_unique_key(self, job: NewJob) -> Job | None:
        check_unique_job(job)
        with self._transaction("cancelling by unique key") as tx:
            now = tx.now()
            key = job.unique_key_at(job.run_at if job.run_at is not None else now)
            locked = tx.lock_unique_holder(key) if key is not None else None
            return None if locked is None else self._cancel_locked(tx, locked)

    # -- unique keys taken back -------------------------------------------------------------
    @staticmethod
    def _holder_refusing(
        tx: Transaction, before: Job | None, after: Job, taken: dict[str, Job]
    ) -> Job | None:
        """The job that holds the key ``after`` would take back (a job taken back earlier in
        the same transaction counts), or ``None``, when the key is then noted as taken."""
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

    # -- workers ----------------------------------------------------------------------------
    def claim(
        self,
        queue: str,
        *,
        limit: int,
        deadline_duration_s: float = DEADLINE_S,
        priority_aging_s: float = 0.0,
    ) -> list[Job]:
        check_claim(queue, limit, deadline_duration_s, priority_aging_s)
        claimed = self._claim(queue, limit, float(deadline_duration_s), float(priority_aging_s))
        if any(job.unreadable for job in claimed):  # rare: a row this version cannot read
            return self._fail_unreadable(claimed)
        return claimed

    def _fail_unreadable(self, claimed: list[Job]) -> list[Job]:
        """Row 7 for each claimed job its store could not read whole: no handler can be given
        it, so it fails at once, and the rest of the batch goes to its handlers."""
        unreadable = [job for job in claimed if job.unreadable]
        self._finish(
            [
                Finish(job.lease, decisions.unreadable_failure(job), claimed=job)
                for job in unreadable
            ]
        )
        return [job for job in claimed if not job.unreadable]

    def heartbeat(self, beats: Sequence[Heartbeat]) -> list[WriteResult]:
        check_heartbeats(beats)
        return self._heartbeat(beats)

    def _heartbeat(self, beats: Sequence[Heartbeat]) -> list[WriteResult]:
        def decide(index: int, job: Job, now: datetime) -> Job:
            beat = beats[index]
            return decisions.heartbeat(job, now, beat.progress, beat.metadata)

        return self._fenced("heartbeat", [beat.lease for beat in beats], decide)

    def finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        check_finishes(finishes)
        return self._finish(finishes)

    def _finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        def decide(index: int, job: Job, now: datetime) -> decisions.Decision:
            fin = finishes[index]
            return decisions.finish(job, fin.outcome, now, self.rng, fin.progress, fin.metadata)

        return self._fenced("finish", [fin.lease for fin in finishes], decide)

    def release(self, leases: Sequence[Lease]) -> list[WriteResult]:
        check_leases(leases)

        def decide(_: int, job: Job, now: datetime) -> decisions.Decision:
            return decisions.release(job, now)

        return self._fenced("releasing attempts", leases, decide)

    def register_callback(
        self, lease: Lease, *, timeout_s: float = CALLBACK_TIMEOUT_S, callback_id: str | None = None
    ) -> WriteResult:
        check_register_callback(lease, timeout_s, callback_id)
        with self._transaction("registering a callback") as tx:
            if callback_id is None:
                chosen = self._new_callback_id()
            elif tx.callback_pending(callback_id):
                raise ValidationError(f"callback id {callback_id!r} is already pending")
            else:
                chosen = callback_id

            def decide(_: int, job: Job, now: datetime) -> Job:
                return decisions.register_callback(job, chosen, timeout_s, now)

            return self._fenced_in(tx, [lease], decide)[0]

    # -- the external side of a callback ----------------------------------------------------
    def resolve_callback(self, callback_id: str, resolution: Resolution) -> Job:
        check_resolution(callback_id, resolution)
        with self._transaction("resolving a callback") as tx:
            locked = self._pending(tx, callback_id)
            decision = decisions.resolve_callback(locked.job, callback_id, resolution, tx.now())
            writes = Writes()
            writes.answered.append(locked.job.lease)
            writes.decided(decision, locked.dlq_enabled)
            tx.write(writes)
            return decision.job

    def heartbeat_callback(self, callback_id: str, *, timeout_s: float) -> Job:
        check_callback_id(callback_id)
        check_seconds("callback timeout", timeout_s, allow_zero=False)
        with self._transaction("extending a callback") as tx:
            locked = self._pending(tx, callback_id)
            extended = decisions.heartbeat_callback(locked.job, callback_id, timeout_s, tx.now())
            writes = Writes()
            writes.keep(extended)
            tx.write(writes)
            return extended

    @staticmethod
    def _pending(tx: Transaction, callback_id: str) -> Locked:
        locked = tx.lock_callback(callback_id)
        if locked is None:
            raise CallbackNotFound(callback_id)
        return locked

    # -- maintenance ------------------------------------------------------------------------
    def rescue(self, *, staleness_s: float = STALENESS_S, limit: int = 1000) -> list[Rescued]:
        check_seconds("heartbeat staleness", staleness_s, allow_zero=False)
        check_limit(limit)
        with self._transaction("rescuing jobs") as tx:
            candidates = tx.rescue_candidates(float(staleness_s), limit)
            if not candidates:
                return []
            now, writes, rescued = tx.now(), Writes(), []
            for locked in candidates:  # in id order, like every adapter, so jitter lines up
                cause = rescue_cause(locked.job, now, staleness_s)
                if cause is None:  # the store and the domain disagree: a bug, not a race
                    raise AssertionError(f"job {locked.job.id} was locked for rescue, no cause")
                decision = decisions.rescue(locked.job, cause, now, self.rng)
                dead = writes.decided(decision, locked.dlq_enabled)
                rescued.append(Rescued(decision.job, cause, dead))
            tx.write(writes)
            return rescued

    def promote(self, *, limit: int = 1000) -> list[Job]:
        check_limit(limit)
        return self._promote(limit)

    def delete_finished(
        self, *, older_than_s: float, failed_older_than_s: float | None = None, limit: int = 1000
    ) -> int:
        check_retention(older_than_s, limit, failed_older_than_s)
        default_s = {
            Retention.COMPLETED: float(older_than_s),
            Retention.FAILED: float(
                older_than_s if failed_older_than_s is None else failed_older_than_s
            ),
        }
        deleted = 0
        for retention in Retention:  # one bounded statement each, within one batch in all
            if deleted < limit:
                deleted += self._delete_finished(retention, default_s[retention], limit - deleted)
        return deleted

    def expire_dlq(self, *, older_than_s: float, limit: int = 1000) -> int:
        check_retention(older_than_s, limit)
        return self._expire_dlq(float(older_than_s), limit)

    def plan_fires(self, *, limit: int = 100) -> FireRound:
        check_limit(limit)
        now, records = self._upcoming_schedules(limit)
        plans = [plan for r in records if (plan := periodic.plan_fires(r, now)) is not None]
        later = [r.next_fire_at for r in records if r.next_fire_at > now]
        more = len(records) == limit and not later
        return FireRound(now, plans, min(later, default=None), more)

    def fire(self, plan: FirePlan) -> list[Job] | None:
        return self._fire(check_fire_plan(plan))

    def try_lead(self, owner: str, *, ttl_s: float) -> bool:
        check_owner(owner)
        check_seconds("leader ttl", ttl_s, allow_zero=False)
        return self._try_lead(owner, float(ttl_s))

    def release_lead(self, owner: str) -> None:
        check_owner(owner)
        self._release_lead(owner)

    # -- operators --------------------------------------------------------------------------
    def get_job(self, job_id: int) -> Job:
        check_job_id(job_id)
        job = self._get_job(job_id)
        if job is None:
            raise JobNotFound(job_id)
        return job

    def list_jobs(
        self,
        *,
        state: JobState | None = None,
        kind: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        tag: str | None = None,
        before_id: int | None = None,
    ) -> list[Job]:
        checked = check_list_filter(state, kind, queue, limit, tag=tag, before_id=before_id)
        return self._list_jobs(JobQuery(checked, kind, queue, tag, before_id, limit=limit))

    def list_job_summaries(
        self,
        *,
        home: Home = "jobs",
        state: JobState | None = None,
        kind: str | None = None,
        queue: str | None = None,
        limit: int = 100,
        tag: str | None = None,
        before_id: int | None = None,
    ) -> list[JobSummary]:
        where = check_home(home)
        checked = check_list_filter(state, kind, queue, limit, tag=tag, before_id=before_id)
        query = JobQuery(checked, kind, queue, tag, before_id, limit=limit)
        # one character more than is kept says whether the text went on (and gets the "…")
        found = self._list_job_summaries(query, where, LAST_ERROR_CHARS_MAX + 1)
        return [
            attrs.evolve(s, last_error=cut_error(s.last_error))
            if s.last_error is not None and len(s.last_error) > LAST_ERROR_CHARS_MAX
            else s
            for s in found
        ]

    def count_jobs(
        self,
        *,
        state: JobState | None = None,
        kind: str | None = None,
        queue: str | None = None,
    ) -> int:
        checked = check_list_filter(state, kind, queue, 1)
        return self._count_jobs(checked, kind, queue)

    def cancel(self, job_id: int) -> Job:
        check_job_id(job_id)
        with self._transaction("cancelling a job") as tx:
            locked = tx.lock_job(job_id)
            if locked is None:
                dead = tx.lock_dead_letter(job_id)
                if dead is None:
                    raise JobNotFound(job_id)
                decisions.cancel(dead, tx.now())  # refuses: a dead letter is failed
                raise AssertionError("the table let a dead-lettered job be cancelled")
            return self._cancel_locked(tx, locked)

    @staticmethod
    def _cancel_locked(tx: Transaction, locked: Locked) -> Job:
        """Row 17 for a job the transaction holds; a running handler is signalled."""
        [cancelled] = StoreCore._cancel_all_locked(tx, [locked])
        return cancelled

    @staticmethod
    def _cancel_all_locked(tx: Transaction, batch: Sequence[Locked]) -> list[Job]:
        """Row 17 for every job of ``batch``, written back in one write."""
        now, writes = tx.now(), Writes()
        for locked in batch:
            decision = decisions.cancel(locked.job, now)
            if locked.job.state.is_live:
                writes.cancelled.append(locked.job.lease)
            writes.decided(decision, locked.dlq_enabled)
        tx.write(writes)
        return list(writes.jobs.values())

    def retry(self, job_id: int, *, run_at: datetime | None = None) -> Job:
        check_job_id(job_id)
        at = check_retry_at(run_at)
        return self._rerun_on_key_race(lambda: self._retry_once(job_id, at))

    def _retry_once(self, job_id: int, run_at: datetime | None) -> Job:
        with self._transaction("retrying a job") as tx:
            locked = tx.lock_job(job_id)
            if locked is None:
                return self._retry_dead_letter(tx, job_id, run_at)
            retried = decisions.operator_retry(locked.job, tx.now(), run_at)
            holder = self._holder_refusing(tx, locked.job, retried, {})
            if holder is not None:
                raise UniqueConflict(holder.id, holder.kind, holder.state.value)
            writes = Writes()
            writes.keep(retried)
            tx.write(writes)
            return retried

    def retry_failed(
        self,
        *,
        queue: str | None = None,
        kind: str | None = None,
        all: bool = False,
        run_at: datetime | None = None,
    ) -> list[Job]:
        check_bulk_filter(queue, kind, all, "failed job")
        at = check_retry_at(run_at)

        def retry(tx: Transaction, batch: list[Locked]) -> list[Job]:
            now, writes = tx.now(), Writes()
            taken: dict[str, Job] = {}
            for locked in batch:
                retried = decisions.operator_retry(locked.job, now, at)
                if self._holder_refusing(tx, locked.job, retried, taken) is None:
                    writes.keep(retried)
            if writes:
                tx.write(writes)
            return list(writes.jobs.values())

        return self._in_batches("retrying failed jobs", (JobState.FAILED,), queue, kind, retry)

    def discard_failed(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        check_bulk_filter(queue, kind, all, "failed job")
        return self._discard_failed(queue, kind)

    def drain_queue(self, queue: str) -> int:
        check_queue(queue)

        def drain(tx: Transaction, batch: list[Locked]) -> list[Job]:
            return self._cancel_all_locked(tx, batch)

        states = decisions.DRAINABLE_STATES
        return len(self._in_batches("draining a queue", states, queue, None, drain))

    def _in_batches(
        self,
        action: str,
        states: Sequence[JobState],
        queue: str | None,
        kind: str | None,
        act: Callable[[Transaction, list[Locked]], list[Job]],
    ) -> list[Job]:
        """``act`` on every matching job, ``BATCH_SIZE_MAX`` per transaction, in id order
        (a job ``act`` leaves as it was is not seen again)."""
        done: list[Job] = []
        after_id = 0
        while True:

            def batch(after_id: int = after_id) -> tuple[list[Locked], list[Job]]:
                with self._transaction(action) as tx:
                    locked = tx.lock_jobs(states, queue, kind, after_id, BATCH_SIZE_MAX)
                    return locked, act(tx, locked) if locked else []

            locked, changed = self._rerun_on_key_race(batch)
            done.extend(changed)
            if len(locked) < BATCH_SIZE_MAX:
                return done
            after_id = locked[-1].job.id

    def pause_queue(self, queue: str) -> None:
        self._set_queue_paused(check_queue(queue), True)

    def resume_queue(self, queue: str) -> None:
        self._set_queue_paused(check_queue(queue), False)

    def configure_queue(
        self,
        queue: str,
        *,
        dlq_enabled: bool | None = None,
        finished_retention_s: float | None = None,
        dlq_retention_s: float | None = None,
        failed_retention_s: float | None = None,
    ) -> QueueSettings:
        check_queue_settings(
            queue, dlq_enabled, finished_retention_s, dlq_retention_s, failed_retention_s
        )
        return self._configure_queue(
            queue,
            dlq_enabled,
            None if finished_retention_s is None else float(finished_retention_s),
            None if dlq_retention_s is None else float(dlq_retention_s),
            None if failed_retention_s is None else float(failed_retention_s),
        )

    def set_dlq_enabled(self, queue: str, enabled: bool) -> None:
        check_queue(queue)
        check_flag("enabled", enabled)
        self._configure_queue(queue, enabled, None, None, None)

    def queue_stats(self) -> list[QueueStats]:
        return self._queue_stats()

    # -- periodic schedules -----------------------------------------------------------------
    def register_schedules(self, schedules: Sequence[Schedule]) -> list[ScheduleRecord]:
        check_schedules(schedules)
        if not schedules:
            return []
        with self._transaction("registering schedules") as tx:
            current = tx.lock_schedules([s.name for s in schedules])
            now = tx.now()  # once the schedules are locked: the time the change takes effect
            records = [periodic.register(s, current.get(s.name), now) for s in schedules]
            writes = Writes()
            writes.schedules.extend(r for r in records if r != current.get(r.name))
            if writes:
                tx.write(writes)
            return records

    def list_schedules(self) -> list[ScheduleRecord]:
        return self._list_schedules()

    def set_schedule_paused(self, name: str, paused: bool) -> ScheduleRecord:
        check_schedule_name(name)
        check_flag("paused", paused)
        with self._transaction("pausing a schedule" if paused else "resuming a schedule") as tx:
            current = self._schedule(tx, name)
            changed = periodic.set_paused(current, paused, tx.now())
            if changed != current:
                writes = Writes()
                writes.schedules.append(changed)
                tx.write(writes)
            return changed

    def trigger_schedule(self, name: str) -> Job:
        check_schedule_name(name)
        with self._transaction("triggering a schedule") as tx:
            job = periodic.triggered_job(self._schedule(tx, name), tx.now())
        [inserted] = self._insert([job], "raise")
        return inserted

    def remove_schedule(self, name: str) -> None:
        check_schedule_name(name)
        if not self._remove_schedule(name):
            raise ScheduleNotFound(name)

    @staticmethod
    def _schedule(tx: Transaction, name: str) -> ScheduleRecord:
        found = tx.lock_schedules([name]).get(name)
        if found is None:
            raise ScheduleNotFound(name)
        return found

    # -- the dead-letter queue --------------------------------------------------------------
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
                return self._retry_dead_letter(tx, job_id, at)

        return self._rerun_on_key_race(retry)

    def _retry_dead_letter(self, tx: Transaction, job_id: int, run_at: datetime | None) -> Job:
        """Row 20 for one job, inside ``tx``; ``UniqueConflict`` when its key is held."""
        dead = tx.lock_dead_letter(job_id)
        if dead is None:
            raise JobNotFound(job_id)
        return self._restore(tx, [dead], run_at, refuse_held=True)[0]

    def _restore(
        self,
        tx: Transaction,
        dead: Sequence[Job],
        run_at: datetime | None,
        *,
        refuse_held: bool,
    ) -> list[Job]:
        """Row 20; a job whose key another holds raises (``refuse_held``) or stays put, and so
        does one with a column its store could not read: restoring it writes every column, so
        it would run with what stands in for that column instead of what it holds."""
        now, writes = tx.now(), Writes()
        taken: dict[str, Job] = {}
        for job in dead:
            if job.unreadable:
                if refuse_held:
                    raise decisions.unrestorable(job)
                continue
            retried = decisions.operator_retry(job, now, run_at)
            holder = self._holder_refusing(tx, None, retried, taken)  # a dead letter holds none
            if holder is None:
                writes.restore(retried)
            elif refuse_held:
                raise UniqueConflict(holder.id, holder.kind, holder.state.value)
        if writes:
            tx.write(writes)
        return writes.restored

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
                return self._restore(tx, dead, at, refuse_held=False) if dead else []

        return self._rerun_on_key_race(retry)

    def purge_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        check_dlq_filter(queue, kind, all)
        return self._purge_dlq(queue, kind)

    def purge_dlq_job(self, job_id: int) -> None:
        if not self._purge_dlq_job(check_job_id(job_id)):
            raise JobNotFound(job_id)
