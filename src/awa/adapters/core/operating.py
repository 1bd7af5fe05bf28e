"""The operator's job and queue verbs (``awa.ports.OperatorStore``): read and count jobs,
cancel and retry them one by one or in bulk, drain, pause and configure queues."""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from datetime import datetime

import attrs

from awa.adapters._fencing import Locked, Writes
from awa.adapters.core.dead_letters import retry_dead_letter
from awa.adapters.core.fenced import FencedCore, cancel_locked, holder_refusing
from awa.adapters.core.transaction import JobBatch, JobQuery, SettingsChange, Transaction
from awa.domain import Job, JobNotFound, JobState, UniqueConflict, decisions
from awa.domain.flow import RateLimit
from awa.domain.validation import check_flag, check_queue
from awa.ports import BATCH_SIZE_MAX, QueueSettings, QueueStats
from awa.ports.checks import (
    check_bulk_filter,
    check_home,
    check_job_id,
    check_list_filter,
    check_queue_settings,
    check_retry_at,
)
from awa.ports.listing import LAST_ERROR_CHARS_MAX, Home, JobSummary, cut_error
from awa.ports.unchanged import UNCHANGED, Unchanged

__all__ = ["Operating"]

#: ``_in_batches``'s action: the jobs of one locked batch it changed
_BatchAction = Callable[[Transaction, list[Locked]], list[Job]]


class Operating(FencedCore):
    # -- primitives -------------------------------------------------------------------------
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
    def _count_jobs(self, state: JobState | None, kind: str | None, queue: str | None) -> int: ...

    @abc.abstractmethod
    def _discard_failed(self, queue: str | None, kind: str | None) -> int:
        """Delete the matching failed jobs outside the dead-letter queue; how many."""

    @abc.abstractmethod
    def _set_queue_paused(self, queue: str, paused: bool) -> None:
        """Resuming also wakes the queue's workers."""

    @abc.abstractmethod
    def _configure_queue(self, queue: str, change: SettingsChange) -> QueueSettings:
        """Store each setting ``change`` gives (creating the queue's settings if it has none
        yet) and return them all, in one atomic step."""

    @abc.abstractmethod
    def queue_stats(self) -> list[QueueStats]: ...

    # -- reading jobs -----------------------------------------------------------------------
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

    # -- acting on jobs ---------------------------------------------------------------------
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
            return cancel_locked(tx, [locked])[0]

    def retry(self, job_id: int, *, run_at: datetime | None = None) -> Job:
        check_job_id(job_id)
        at = check_retry_at(run_at)
        return self._rerun_on_key_race(lambda: self._retry_once(job_id, at))

    def _retry_once(self, job_id: int, run_at: datetime | None) -> Job:
        with self._transaction("retrying a job") as tx:
            locked = tx.lock_job(job_id)
            if locked is None:
                return retry_dead_letter(tx, job_id, run_at)
            retried = decisions.operator_retry(locked.job, tx.now(), run_at)
            holder = holder_refusing(tx, locked.job, retried, {})
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
                if holder_refusing(tx, locked.job, retried, taken) is None:
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
        states = decisions.DRAINABLE_STATES
        return len(self._in_batches("draining a queue", states, queue, None, cancel_locked))

    def _in_batches(
        self,
        action: str,
        states: Sequence[JobState],
        queue: str | None,
        kind: str | None,
        act: _BatchAction,
    ) -> list[Job]:
        """``act`` on every matching job, ``BATCH_SIZE_MAX`` per transaction, in id order
        (a job ``act`` leaves as it was is not seen again)."""
        done: list[Job] = []
        after_id = 0
        while True:

            def batch(after_id: int = after_id) -> tuple[list[Locked], list[Job]]:
                with self._transaction(action) as tx:
                    found = JobBatch(tuple(states), queue, kind, after_id, BATCH_SIZE_MAX)
                    locked = tx.lock_jobs(found)
                    return locked, act(tx, locked) if locked else []

            locked, changed = self._rerun_on_key_race(batch)
            done.extend(changed)
            if len(locked) < BATCH_SIZE_MAX:
                return done
            after_id = locked[-1].job.id

    # -- queues -----------------------------------------------------------------------------
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
        concurrency_limit: int | Unchanged | None = UNCHANGED,
        rate_limit: RateLimit | tuple[float, int] | Unchanged | None = UNCHANGED,
        key_concurrency_limit: int | Unchanged | None = UNCHANGED,
        key_rate_limit: RateLimit | tuple[float, int] | Unchanged | None = UNCHANGED,
    ) -> QueueSettings:
        flow = check_queue_settings(
            queue,
            dlq_enabled,
            finished_retention_s,
            dlq_retention_s,
            failed_retention_s,
            concurrency_limit,
            rate_limit,
            key_concurrency_limit=key_concurrency_limit,
            key_rate_limit=key_rate_limit,
        )
        change = SettingsChange(
            dlq_enabled,
            flow.finished_retention_s,
            flow.dlq_retention_s,
            flow.failed_retention_s,
            flow.concurrency_limit,
            flow.rate_limit,
            flow.key_concurrency_limit,
            flow.key_rate_limit,
        )
        return self._configure_queue(queue, change)

    def set_dlq_enabled(self, queue: str, enabled: bool) -> None:
        check_queue(queue)
        check_flag("enabled", enabled)
        self._configure_queue(queue, SettingsChange(dlq_enabled=enabled))
