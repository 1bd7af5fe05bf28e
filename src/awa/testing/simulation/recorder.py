"""The store as the simulation sees it: every call recorded, every answer checked.

``RecordingStore`` wraps any ``ClaimStore`` (the memory store by default). It keeps the
history the digest is computed from, a model of each job's attempts, and a list of violations
of the lifecycle's laws, checked at the moment a write is answered.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from awa.domain import (
    CallbackNotFound,
    DlqEntry,
    ErrorEntry,
    Job,
    JobNotFound,
    Lease,
    NewJob,
    Resolution,
    RetryCallback,
    Snooze,
)
from awa.domain.defaults import CALLBACK_TIMEOUT_S, DEADLINE_S
from awa.domain.endings import dlq_reason_after
from awa.ports import (
    Applied,
    ClaimStore,
    Clock,
    Event,
    Finish,
    Heartbeat,
    JobsAvailable,
    Listens,
    QueueStats,
    Rescued,
    Stale,
    WriteResult,
)

__all__ = ["RecordingStore", "expected_dlq_reason"]


def expected_dlq_reason(last: ErrorEntry) -> str:
    """The dead-letter reason the poison-job table gives for an attempt's last error."""
    return dlq_reason_after(last)


@attrs.define
class _Model:
    max_run_lease: int = 0
    claims: int = 0  # since the last reset of the attempt budget
    snoozes: int = 0


class RecordingStore:
    """A ``ClaimStore`` that delegates to ``store`` and checks each answer."""

    def __init__(self, store: ClaimStore, rng: random.Random, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.rng = rng
        self.history: list[str] = []
        self.violations: list[str] = []
        self.counters: Counter[str] = Counter()
        self.models: dict[int, _Model] = {}
        self.pending_callbacks: list[str] = []
        self.lost_wakeup_rate = 0.0

    # -- bookkeeping ---------------------------------------------------------------------------
    def note(self, line: str) -> None:
        self.history.append(f"{self.clock.now().isoformat()} {line}")

    def violation(self, message: str) -> None:
        self.violations.append(message)
        self.note(f"VIOLATION {message}")

    def _observe(self, job: Job) -> None:
        model = self.models.setdefault(job.id, _Model())
        if job.run_lease < model.max_run_lease:
            self.violation(
                f"job {job.id} run_lease went down {model.max_run_lease}->{job.run_lease}"
            )
        model.max_run_lease = max(model.max_run_lease, job.run_lease)
        if job.attempt != model.claims - model.snoozes:
            self.violation(
                f"job {job.id} attempt {job.attempt} but {model.claims} claims and"
                f" {model.snoozes} snoozes since its budget was last reset"
            )
        if job.attempt > job.max_attempts:
            self.violation(f"job {job.id} attempt {job.attempt} > max_attempts {job.max_attempts}")

    def _reset(self, job: Job) -> None:
        model = self.models.setdefault(job.id, _Model())
        model.claims = model.snoozes = 0
        self._observe(job)

    def _current(self, job_id: int) -> Job | None:
        try:
            return self.store.get_job(job_id)
        except JobNotFound:
            return None

    def _check_fenced(
        self, what: str, lease: Lease, before: Job | None, result: WriteResult
    ) -> None:
        """A write through a lease that no longer owned a live job must not apply."""
        owned = before is not None and before.run_lease == lease.run_lease and before.state.is_live
        if isinstance(result, Applied):
            if not owned:
                state = before.state.value if before else "gone"
                self.violation(f"stale {what} accepted for {lease} (job was {state})")
            self._observe(result.job)
        else:
            self.counters[f"stale_{what}_rejected"] += 1

    # -- producers -----------------------------------------------------------------------------
    def insert(self, jobs: Sequence[NewJob]) -> list[Job]:
        created = self.store.insert(jobs)
        for job in created:
            self.models[job.id] = _Model()
        self.note(
            f"insert {len(created)} -> ids {created[0].id}..{created[-1].id}"
            if created
            else "insert 0"
        )
        return created

    # -- workers -------------------------------------------------------------------------------
    def claim(
        self, queue: str, *, limit: int, deadline_duration_s: float = DEADLINE_S
    ) -> list[Job]:
        claimed = self.store.claim(queue, limit=limit, deadline_duration_s=deadline_duration_s)
        for job in claimed:
            model = self.models.setdefault(job.id, _Model())
            if job.run_lease != model.max_run_lease + 1:
                self.violation(
                    f"claim gave job {job.id} lease {job.run_lease} after {model.max_run_lease}"
                )
            model.claims += 1
            self._observe(job)
        if claimed:
            self.note(f"claim {queue} -> {' '.join(str(j.lease) for j in claimed)}")
        return claimed

    def heartbeat(self, beats: Sequence[Heartbeat]) -> list[WriteResult]:
        before = {b.lease.job_id: self._current(b.lease.job_id) for b in beats}
        results = self.store.heartbeat(beats)
        for beat, result in zip(beats, results, strict=True):
            self._check_fenced("heartbeat", beat.lease, before[beat.lease.job_id], result)
        self.note(f"heartbeat {len(beats)} stale={sum(isinstance(r, Stale) for r in results)}")
        return results

    def finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        before = {f.lease.job_id: self._current(f.lease.job_id) for f in finishes}
        results = self.store.finish(finishes)
        for finish, result in zip(finishes, results, strict=True):
            if isinstance(result, Applied) and isinstance(finish.outcome, Snooze):
                self.models[finish.lease.job_id].snoozes += 1
            self._check_fenced("finish", finish.lease, before[finish.lease.job_id], result)
            outcome = type(finish.outcome).__name__
            verdict = "ok" if isinstance(result, Applied) else f"stale:{result.reason}"
            self.note(f"finish {finish.lease} {outcome} {verdict}")
        return results

    def release(self, leases: Sequence[Lease]) -> list[WriteResult]:
        before = {lease.job_id: self._current(lease.job_id) for lease in leases}
        results = self.store.release(leases)
        for lease, result in zip(leases, results, strict=True):
            self._check_fenced("release", lease, before[lease.job_id], result)
        self.note(f"release {len(leases)} stale={sum(isinstance(r, Stale) for r in results)}")
        return results

    def register_callback(
        self, lease: Lease, *, timeout_s: float = CALLBACK_TIMEOUT_S, callback_id: str | None = None
    ) -> WriteResult:
        before = self._current(lease.job_id)
        result = self.store.register_callback(lease, timeout_s=timeout_s, callback_id=callback_id)
        self._check_fenced("register_callback", lease, before, result)
        if isinstance(result, Applied) and result.job.callback_id is not None:
            self.pending_callbacks.append(result.job.callback_id)
        return result

    # -- callbacks -----------------------------------------------------------------------------
    def resolve_callback(self, callback_id: str, resolution: Resolution) -> Job:
        try:
            job = self.store.resolve_callback(callback_id, resolution)
        except CallbackNotFound:
            self.counters["callback_not_found"] += 1
            self.note(f"callback {type(resolution).__name__} {callback_id[:8]} not found")
            raise
        self.counters["callbacks_resolved"] += 1
        if isinstance(resolution, RetryCallback):
            self._reset(job)
        else:
            self._observe(job)
        self.note(
            f"callback {type(resolution).__name__} {callback_id[:8]} -> {job.lease} {job.state}"
        )
        return job

    def heartbeat_callback(self, callback_id: str, *, timeout_s: float) -> Job:
        job = self.store.heartbeat_callback(callback_id, timeout_s=timeout_s)
        self._observe(job)
        return job

    # -- maintenance ---------------------------------------------------------------------------
    def rescue(self, *, staleness_s: float = 90.0, limit: int = 1000) -> list[Rescued]:
        rescued = self.store.rescue(staleness_s=staleness_s, limit=limit)
        for item in rescued:
            self.counters[f"rescued_{item.cause.dlq_reason.value}"] += 1
            self._observe(item.job)
            if (
                item.dead_lettered
                and expected_dlq_reason(item.job.errors[-1]) != item.cause.dlq_reason.value
            ):
                self.violation(
                    f"job {item.job.id} dead-lettered for {item.cause} after {item.job.errors[-1]}"
                )
            self.note(f"rescue {item.job.lease} {item.cause.name} -> {item.job.state}")
        return rescued

    def promote(self, *, limit: int = 1000) -> list[Job]:
        promoted = self.store.promote(limit=limit)
        for job in promoted:
            self._observe(job)
        if promoted:
            self.note(f"promote {len(promoted)}")
        return promoted

    def delete_finished(self, *, older_than_s: float, limit: int = 1000) -> int:
        return self.store.delete_finished(older_than_s=older_than_s, limit=limit)

    def expire_dlq(self, *, older_than_s: float, limit: int = 1000) -> int:
        return self.store.expire_dlq(older_than_s=older_than_s, limit=limit)

    def try_lead(self, owner: str, *, ttl_s: float) -> bool:
        return self.store.try_lead(owner, ttl_s=ttl_s)

    def release_lead(self, owner: str) -> None:
        self.store.release_lead(owner)

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        def lossy(event: Event) -> None:
            if isinstance(event, JobsAvailable) and self.rng.random() < self.lost_wakeup_rate:
                self.counters["wakeups_lost"] += 1
                return
            listener(event)

        if not isinstance(self.store, Listens):
            return lambda: None  # no hints: the workers poll
        return self.store.subscribe(lossy)

    # -- operators -----------------------------------------------------------------------------
    def get_job(self, job_id: int) -> Job:
        return self.store.get_job(job_id)

    def list_jobs(self, **filters: Any) -> list[Job]:
        return self.store.list_jobs(**filters)

    def cancel(self, job_id: int) -> Job:
        job = self.store.cancel(job_id)
        self._observe(job)
        self.note(f"operator cancel {job_id}")
        return job

    def retry(self, job_id: int) -> Job:
        job = self.store.retry(job_id)
        self._reset(job)
        return job

    def pause_queue(self, queue: str) -> None:
        self.store.pause_queue(queue)
        self.note(f"operator pause {queue}")

    def resume_queue(self, queue: str) -> None:
        self.store.resume_queue(queue)
        self.note(f"operator resume {queue}")

    def set_dlq_enabled(self, queue: str, enabled: bool) -> None:
        self.store.set_dlq_enabled(queue, enabled)

    def queue_stats(self) -> list[QueueStats]:
        return self.store.queue_stats()

    def move_to_dlq(self, job_id: int, *, reason: str) -> DlqEntry:
        return self.store.move_to_dlq(job_id, reason=reason)

    def list_dlq(self, **filters: Any) -> list[DlqEntry]:
        return self.store.list_dlq(**filters)

    def get_dlq_entry(self, job_id: int) -> DlqEntry | None:
        return self.store.get_dlq_entry(job_id)

    def retry_from_dlq(self, job_id: int) -> Job:
        job = self.store.retry_from_dlq(job_id)
        self._reset(job)
        return job

    def bulk_retry_from_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> list[Job]:
        jobs = self.store.bulk_retry_from_dlq(queue=queue, kind=kind, all=all)
        for job in jobs:
            self._reset(job)
        self.note(f"operator dlq retry-bulk {queue} -> {len(jobs)}")
        return jobs

    def purge_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        return self.store.purge_dlq(queue=queue, kind=kind, all=all)
