"""``StoreCore``: the ``ClaimStore`` port written once, over a store's primitives.

Every public verb here checks its arguments first (``awa.ports.checks``), then either hands
the work to one primitive the adapter supplies (``_insert``, ``_claim``, reads, settings) or
runs the lifecycle itself inside one ``Transaction`` of the adapter's: lock the rows, let the
domain decide (``awa.domain.decisions``), write the decided rows back. Adapters hold storage,
not decisions: they supply "lock these rows" and "write these rows" (``Transaction``) and the
few statements that are simple enough to run as one (``docs/store-adapters.md``).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

import attrs

from awa.adapters._fencing import Decide, Locked, Writes, fence, stale_results
from awa.domain import (
    CallbackNotFound,
    DlqEntry,
    Job,
    JobNotFound,
    JobState,
    Lease,
    NewJob,
    RandomSource,
    Resolution,
    ValidationError,
    decisions,
)
from awa.domain.defaults import CALLBACK_TIMEOUT_S, DEADLINE_S, STALENESS_S
from awa.domain.rescue import rescue_cause
from awa.domain.validation import check_queue, check_seconds
from awa.ports import Finish, Heartbeat, QueueStats, Rescued, WriteResult
from awa.ports.checks import (
    check_callback_id,
    check_claim,
    check_dlq_filter,
    check_finishes,
    check_heartbeats,
    check_job_id,
    check_leases,
    check_limit,
    check_list_filter,
    check_new_jobs,
    check_owner,
    check_reason,
    check_register_callback,
    check_resolution,
    check_retention,
)

__all__ = ["JobQuery", "StoreCore", "Transaction"]


@attrs.frozen
class JobQuery:
    """``list_jobs``'s checked filters, as one value an adapter's ``_list_jobs`` reads."""

    state: JobState | None
    kind: str | None
    queue: str | None
    tag: str | None
    before_id: int | None
    newest_first: bool
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

    def rescue_candidates(self, staleness_s: float, limit: int) -> list[Locked]:
        """Lock up to ``limit`` live jobs, in id order, for which ``rescue_cause`` gives a
        cause at ``now()``: heartbeat older than ``staleness_s``, deadline or callback timeout
        passed."""
        ...

    def write(self, writes: Writes) -> None:
        """Write the decided jobs back, move the dead letters (with ``now()`` as ``dlq_at``),
        put restored jobs back, and send the hints: cancels, answered callbacks, and one
        wake-up per queue that got runnable jobs."""
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
    def _insert(self, jobs: Sequence[NewJob]) -> list[Job]:
        """Row 1 (``decisions.create_job``'s values) for a non-empty batch, ids in order."""

    @abc.abstractmethod
    def _claim(self, queue: str, limit: int, deadline_duration_s: float) -> list[Job]:
        """Row 3 (``decisions.claim``'s values), in ``(priority, run_at, id)`` order."""

    @abc.abstractmethod
    def _promote(self, limit: int) -> list[Job]:
        """Row 2 (``decisions.promote``) for due jobs, in ``(run_at, id)`` order."""

    @abc.abstractmethod
    def _delete_finished(self, older_than_s: float, limit: int) -> int: ...

    @abc.abstractmethod
    def _expire_dlq(self, older_than_s: float, limit: int) -> int: ...

    @abc.abstractmethod
    def _try_lead(self, owner: str, ttl_s: float) -> bool: ...

    @abc.abstractmethod
    def _release_lead(self, owner: str) -> None: ...

    @abc.abstractmethod
    def _get_job(self, job_id: int) -> Job | None:
        """From whichever home holds it."""

    @abc.abstractmethod
    def _list_jobs(self, query: JobQuery) -> list[Job]: ...

    @abc.abstractmethod
    def _set_queue_paused(self, queue: str, paused: bool) -> None:
        """Resuming also wakes the queue's workers."""

    @abc.abstractmethod
    def _set_dlq_enabled(self, queue: str, enabled: bool) -> None: ...

    @abc.abstractmethod
    def _queue_stats(self) -> list[QueueStats]: ...

    @abc.abstractmethod
    def _list_dlq(self, queue: str | None, kind: str | None, limit: int) -> list[DlqEntry]: ...

    @abc.abstractmethod
    def _get_dlq_entry(self, job_id: int) -> DlqEntry | None: ...

    @abc.abstractmethod
    def _purge_dlq(self, queue: str | None, kind: str | None) -> int: ...

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
        if writes:
            tx.write(writes)
        states = tx.lease_states(sorted({leases[i].job_id for i in unowned})) if unowned else {}
        return stale_results(results, leases, unowned, states)

    # -- producers --------------------------------------------------------------------------
    def insert(self, jobs: Sequence[NewJob]) -> list[Job]:
        check_new_jobs(jobs)
        return self._insert(jobs) if jobs else []

    # -- workers ----------------------------------------------------------------------------
    def claim(
        self, queue: str, *, limit: int, deadline_duration_s: float = DEADLINE_S
    ) -> list[Job]:
        check_claim(queue, limit, deadline_duration_s)
        return self._claim(queue, limit, float(deadline_duration_s))

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

    def delete_finished(self, *, older_than_s: float, limit: int = 1000) -> int:
        check_retention(older_than_s, limit)
        return self._delete_finished(float(older_than_s), limit)

    def expire_dlq(self, *, older_than_s: float, limit: int = 1000) -> int:
        check_retention(older_than_s, limit)
        return self._expire_dlq(float(older_than_s), limit)

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
        newest_first: bool = False,
    ) -> list[Job]:
        checked = check_list_filter(
            state, kind, queue, limit, tag=tag, before_id=before_id, newest_first=newest_first
        )
        return self._list_jobs(
            JobQuery(checked, kind, queue, tag, before_id, newest_first=newest_first, limit=limit)
        )

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
            decision = decisions.cancel(locked.job, tx.now())
            writes = Writes()
            if locked.job.state.is_live:
                writes.cancelled.append(locked.job.lease)
            writes.decided(decision, locked.dlq_enabled)
            tx.write(writes)
            return decision.job

    def retry(self, job_id: int) -> Job:
        check_job_id(job_id)
        with self._transaction("retrying a job") as tx:
            locked = tx.lock_job(job_id)
            if locked is None:
                return self._retry_dead_letter(tx, job_id)
            retried = decisions.operator_retry(locked.job, tx.now())
            writes = Writes()
            writes.keep(retried)
            tx.write(writes)
            return retried

    def pause_queue(self, queue: str) -> None:
        self._set_queue_paused(check_queue(queue), True)

    def resume_queue(self, queue: str) -> None:
        self._set_queue_paused(check_queue(queue), False)

    def set_dlq_enabled(self, queue: str, enabled: bool) -> None:
        check_queue(queue)
        if not isinstance(enabled, bool):
            raise ValidationError(f"enabled must be True or False, got {enabled!r}")
        self._set_dlq_enabled(queue, enabled)

    def queue_stats(self) -> list[QueueStats]:
        return self._queue_stats()

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
        self, *, queue: str | None = None, kind: str | None = None, limit: int = 100
    ) -> list[DlqEntry]:
        check_dlq_filter(queue, kind, all=True)
        check_limit(limit)
        return self._list_dlq(queue, kind, limit)

    def get_dlq_entry(self, job_id: int) -> DlqEntry | None:
        return self._get_dlq_entry(check_job_id(job_id))

    def retry_from_dlq(self, job_id: int) -> Job:
        check_job_id(job_id)
        with self._transaction("retrying a dead-letter job") as tx:
            return self._retry_dead_letter(tx, job_id)

    def _retry_dead_letter(self, tx: Transaction, job_id: int) -> Job:
        """Row 20 for one job, inside ``tx``."""
        dead = tx.lock_dead_letter(job_id)
        if dead is None:
            raise JobNotFound(job_id)
        return self._restore(tx, [dead])[0]

    def _restore(self, tx: Transaction, dead: Sequence[Job]) -> list[Job]:
        now, writes = tx.now(), Writes()
        retried = [decisions.operator_retry(job, now) for job in dead]
        for job in retried:
            writes.restore(job)
        tx.write(writes)
        return retried

    def bulk_retry_from_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> list[Job]:
        check_dlq_filter(queue, kind, all)
        with self._transaction("retrying dead-letter jobs") as tx:
            dead = tx.lock_dead_letters(queue, kind)
            return self._restore(tx, dead) if dead else []

    def purge_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        check_dlq_filter(queue, kind, all)
        return self._purge_dlq(queue, kind)
