"""The store as the simulation sees it: every call recorded, every answer checked.

``RecordingStore`` wraps any ``ClaimStore`` (the memory store by default). It keeps the
history the digest is computed from, a model of each job's attempts, and a list of violations
of the lifecycle's laws, checked at the moment a write is answered. A verb whose arguments
the record needs is written out; the others take the port's own signature and defaults
(``_passed_on``: unrecorded; ``_checked``: its answer checked).
"""

from __future__ import annotations

import inspect
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

import attrs

from awa.domain import (
    CallbackNotFound,
    ErrorEntry,
    FirePlan,
    Job,
    JobNotFound,
    JobState,
    Lease,
    NewJob,
    OnConflict,
    Resolution,
    RetryCallback,
    Snooze,
    UniqueConflict,
)
from awa.domain.defaults import CALLBACK_TIMEOUT_S
from awa.domain.endings import dlq_reason_after
from awa.domain.unique import holds_unique_key
from awa.ports import (
    Applied,
    ClaimStore,
    Clock,
    Event,
    Finish,
    Heartbeat,
    JobsAvailable,
    Listens,
    Rescued,
    Stale,
    WriteResult,
)
from awa.testing.laws import field_disagreements
from awa.testing.simulation.scheduling import fire_of, unique_violations

__all__ = ["RecordingStore", "expected_dlq_reason"]

P = ParamSpec("P")
R = TypeVar("R")


def expected_dlq_reason(last: ErrorEntry) -> str:
    """The dead-letter reason the poison-job table gives for an attempt's last error."""
    return dlq_reason_after(last)


def _passed_on(
    verb: Callable[Concatenate[Any, P], R],
) -> Callable[Concatenate[RecordingStore, P], R]:
    """A verb passed on to the store unrecorded, with the port's signature and defaults."""
    name = verb.__name__

    def passed_on(self: RecordingStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        answer: R = getattr(self.store, name)(*args, **kwargs)
        return answer

    passed_on.__name__ = passed_on.__qualname__ = name
    return passed_on


def _checked(
    verb: Callable[Concatenate[Any, P], R], check: Callable[[RecordingStore, R], None]
) -> Callable[Concatenate[RecordingStore, P], R]:
    """A verb passed on to the store whose answer ``check`` records and checks (it needs
    none of the arguments), with the port's signature and defaults."""
    return _observed(verb, lambda store, answer, _arguments: check(store, answer))


def _observed(
    verb: Callable[Concatenate[Any, P], R],
    check: Callable[[RecordingStore, R, Mapping[str, Any]], None],
) -> Callable[Concatenate[RecordingStore, P], R]:
    """As ``_checked``, for a check that reads the call's arguments too: bound to the port's
    signature, its defaults applied (so the record sees what the store was told)."""
    name = verb.__name__
    signature = inspect.signature(verb)

    def observed(self: RecordingStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        answer: R = getattr(self.store, name)(*args, **kwargs)
        call = signature.bind(self, *args, **kwargs)
        call.apply_defaults()
        check(self, answer, call.arguments)
        return answer

    observed.__name__ = observed.__qualname__ = name
    return observed


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
        self.fired: dict[str, set[datetime]] = {}  # schedule -> fire times enqueued
        self.unique_ids: set[int] = set()  # jobs inserted with a unique key
        self.key_limits: dict[str, int] = {}  # key_concurrency_limit per queue, as configured

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
        for problem in field_disagreements(job):
            self.violation(problem)

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

    # -- scheduling laws (awa.testing.simulation.scheduling) -------------------------------------
    def _unique_jobs(self) -> list[Job]:
        jobs = (self._current(job_id) for job_id in sorted(self.unique_ids))
        return [job for job in jobs if job is not None]

    def check_unique_holders(self) -> None:
        for found in unique_violations(self._unique_jobs()):
            self.violation(found)

    def _check_unique_answer(self, new: NewJob, answer: Job | None, holder_id: int | None) -> None:
        """An insert answered with (or refused for) a holder met one; one that went through
        met none."""
        key = new.unique_key_at(new.run_at or self.clock.now())
        holders = [j for j in self._unique_jobs() if holds_unique_key(j) and j.unique_key == key]
        if holder_id is not None:
            if [j.id for j in holders] != [holder_id]:
                self.violation(f"insert refused for job {holder_id}, but {holders} hold its key")
        elif answer is not None and [j.id for j in holders] != [answer.id]:
            self.violation(f"insert of key {key} answered {answer.id} while {holders} hold it")

    def _record_fires(self, jobs: Sequence[Job]) -> None:
        for job in jobs:
            fire = fire_of(job)
            if fire is None:
                continue
            name, fire_at = fire
            seen = self.fired.setdefault(name, set())
            if fire_at in seen:
                self.violation(f"{name} enqueued its fire at {fire_at.isoformat()} twice")
            seen.add(fire_at)

    # -- producers -----------------------------------------------------------------------------
    def insert(self, jobs: Sequence[NewJob], *, on_conflict: OnConflict = "raise") -> list[Job]:
        unique = len(jobs) == 1 and jobs[0].unique is not None
        try:
            created = self.store.insert(jobs, on_conflict=on_conflict)
        except UniqueConflict as conflict:
            self.counters["unique_refused"] += 1
            self._check_unique_answer(jobs[0], None, conflict.job_id)
            self.note(f"insert refused: job {conflict.job_id} holds the key")
            raise
        if unique:
            [job] = created
            if job.id in self.unique_ids:
                self.counters["unique_skipped"] += 1
            else:
                self.counters["unique_inserted"] += 1
                self.unique_ids.add(job.id)
            self._check_unique_answer(jobs[0], job, None)
        for job in created:
            self.models.setdefault(job.id, _Model())
        self.note(
            f"insert {len(created)} -> ids {created[0].id}..{created[-1].id}"
            if created
            else "insert 0"
        )
        return created

    # -- workers -------------------------------------------------------------------------------
    def _cancelled_by_key(self, cancelled: Job | None) -> None:
        if cancelled is not None:
            self._observe(cancelled)

    cancel_by_unique_key = _checked(ClaimStore.cancel_by_unique_key, _cancelled_by_key)

    def _claimed(self, claimed: list[Job], call: Mapping[str, Any]) -> None:
        for job in claimed:
            model = self.models.setdefault(job.id, _Model())
            if job.run_lease != model.max_run_lease + 1:
                self.violation(
                    f"claim gave job {job.id} lease {job.run_lease} after {model.max_run_lease}"
                )
            model.claims += 1
            self._observe(job)
        if claimed:
            self.note(f"claim {call['queue']} -> {' '.join(str(j.lease) for j in claimed)}")
        if any(j.concurrency_key is not None or j.ordering_key is not None for j in claimed):
            self._check_keys(call["queue"], claimed)

    def _check_keys(self, queue: str, claimed: list[Job]) -> None:
        """Flow control's laws after a claim took keyed jobs, on the store's own rows: no
        key of the queue past its ``key_concurrency_limit`` (the simulation never lowers
        one), at most one live attempt per ordering key, and the one claimed its key's
        oldest unfinished job."""
        jobs = self.store.list_jobs(queue=queue, limit=5000)
        live = [j for j in jobs if j.state in (JobState.RUNNING, JobState.WAITING_EXTERNAL)]
        limit = self.key_limits.get(queue)
        by_key = Counter(j.concurrency_key for j in live if j.concurrency_key is not None)
        for key in {j.concurrency_key for j in claimed if j.concurrency_key is not None}:
            if limit is not None and by_key[key] > limit:
                self.violation(f"key {key!r} of {queue} has {by_key[key]} live > {limit}")
        ordered = Counter(j.ordering_key for j in live if j.ordering_key is not None)
        for job in claimed:
            ordering = job.ordering_key
            if ordering is None:
                continue
            if ordered[ordering] > 1:
                self.violation(f"ordering key {ordering!r} has {ordered[ordering]} live attempts")
            older = [
                j.id
                for j in jobs
                if j.ordering_key == ordering and j.id < job.id and not j.state.is_terminal
            ]
            if older:
                self.violation(f"job {job.id} started before older job {older[0]} of its key")

    claim = _observed(ClaimStore.claim, _claimed)

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

    heartbeat_callback = _checked(ClaimStore.heartbeat_callback, _observe)

    # -- maintenance ---------------------------------------------------------------------------
    def _rescued(self, rescued: list[Rescued]) -> None:
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

    rescue = _checked(ClaimStore.rescue, _rescued)

    def _promoted(self, promoted: list[Job]) -> None:
        for job in promoted:
            self._observe(job)
        if promoted:
            self.note(f"promote {len(promoted)}")

    promote = _checked(ClaimStore.promote, _promoted)
    plan_fires = _passed_on(ClaimStore.plan_fires)

    def fire(self, plan: FirePlan) -> list[Job] | None:
        fired = self.store.fire(plan)
        if fired is None:
            self.counters["stale_fires_refused"] += 1
            self.note(f"fire {plan.name} planned at {plan.planned_at.isoformat()} refused")
            return None
        self.counters["fires"] += len(fired)
        for job in fired:
            self.models[job.id] = _Model()
        self._record_fires(fired)
        self.note(f"fire {plan.name} -> {' '.join(str(j.id) for j in fired)}")
        return fired

    delete_finished = _passed_on(ClaimStore.delete_finished)
    expire_dlq = _passed_on(ClaimStore.expire_dlq)
    try_lead = _passed_on(ClaimStore.try_lead)
    release_lead = _passed_on(ClaimStore.release_lead)

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
    get_job = _passed_on(ClaimStore.get_job)
    list_jobs = _passed_on(ClaimStore.list_jobs)
    list_job_summaries = _passed_on(ClaimStore.list_job_summaries)
    count_jobs = _passed_on(ClaimStore.count_jobs)
    discard_failed = _passed_on(ClaimStore.discard_failed)
    drain_queue = _passed_on(ClaimStore.drain_queue)
    configure_queue = _passed_on(ClaimStore.configure_queue)
    set_dlq_enabled = _passed_on(ClaimStore.set_dlq_enabled)
    queue_stats = _passed_on(ClaimStore.queue_stats)
    register_schedules = _passed_on(ClaimStore.register_schedules)
    list_schedules = _passed_on(ClaimStore.list_schedules)
    set_schedule_paused = _passed_on(ClaimStore.set_schedule_paused)
    remove_schedule = _passed_on(ClaimStore.remove_schedule)
    move_to_dlq = _passed_on(ClaimStore.move_to_dlq)
    list_dlq = _passed_on(ClaimStore.list_dlq)
    get_dlq_entry = _passed_on(ClaimStore.get_dlq_entry)
    purge_dlq = _passed_on(ClaimStore.purge_dlq)
    purge_dlq_job = _passed_on(ClaimStore.purge_dlq_job)

    def _reset_all(self, jobs: list[Job]) -> None:
        for job in jobs:
            self._reset(job)

    retry_failed = _checked(ClaimStore.retry_failed, _reset_all)
    retry_from_dlq = _checked(ClaimStore.retry_from_dlq, _reset)

    def _cancelled(self, job: Job) -> None:
        self._observe(job)
        self.note(f"operator cancel {job.id}")

    cancel = _checked(ClaimStore.cancel, _cancelled)

    def _retried(self, job: Job) -> None:
        self._reset(job)
        self.check_unique_holders()

    retry = _checked(ClaimStore.retry, _retried)

    def _triggered(self, job: Job) -> None:
        self.models[job.id] = _Model()

    trigger_schedule = _checked(ClaimStore.trigger_schedule, _triggered)

    def pause_queue(self, queue: str) -> None:
        self.store.pause_queue(queue)
        self.note(f"operator pause {queue}")

    def resume_queue(self, queue: str) -> None:
        self.store.resume_queue(queue)
        self.note(f"operator resume {queue}")

    def _bulk_retried(self, jobs: list[Job], call: Mapping[str, Any]) -> None:
        for job in jobs:
            self._reset(job)
        self.note(f"operator dlq retry-bulk {call['queue']} -> {len(jobs)}")
        self.check_unique_holders()

    bulk_retry_from_dlq = _observed(ClaimStore.bulk_retry_from_dlq, _bulk_retried)
