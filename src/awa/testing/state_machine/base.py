"""What the state machine knows of each job, and the checks its rules share.

Every rule of the machine (``producers``, ``workers``, ``external``, ``operators``,
``maintenance``, ``invariants``) extends ``MachineBase``: the store under test, its clock, the
model of what the machine has seen, and the comparison of the store's rows with the domain's
prediction.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import ClassVar

import attrs
from hypothesis.stateful import RuleBasedStateMachine

from awa.adapters.memory import ManualClock
from awa.domain import CallbackNotFound, IllegalTransition, Job, JobState, Lease, holds_unique_key
from awa.domain.backoff import _JITTER_FRACTION, BACKOFF_MAX_S
from awa.ports import BATCH_SIZE_MAX, Applied, ClaimStore, QueueSettings, Stale

__all__ = [
    "DLQ_QUEUE",
    "QUEUES",
    "STALENESS_S",
    "MachineBase",
    "Model",
    "NoJitter",
    "StoreFactory",
]

StoreFactory = Callable[[ManualClock], ClaimStore]

STALENESS_S = 90.0
DLQ_QUEUE = "with_dlq"
PLAIN_QUEUE = "plain"
QUEUES = (DLQ_QUEUE, PLAIN_QUEUE)


class NoJitter:
    """The prediction draws no jitter; ``_jittered`` allows for the store's."""

    def random(self) -> float:
        return 0.0


def _jittered(predicted: Job, after: Job, now: datetime) -> bool:
    """``after`` is ``predicted`` retried with backoff jitter: later by at most a quarter of
    the jitter-free delay, never beyond the cap."""
    if predicted.state is not JobState.RETRYABLE or not predicted.errors:
        return False
    base = predicted.run_at - now
    latest = min(now + base * (1 + _JITTER_FRACTION), now + timedelta(seconds=BACKOFF_MAX_S))
    return predicted.run_at <= after.run_at <= max(latest, predicted.run_at)


@attrs.define
class Model:
    """What the machine has seen happen to one job."""

    max_run_lease: int = 0
    claims_since_reset: int = 0
    snoozes_since_reset: int = 0
    leases: list[int] = attrs.Factory(list)
    unique_key: str | None = None  # a job's key never changes


class MachineBase(RuleBasedStateMachine):
    """The store under test on a fresh ``ManualClock``, and what the machine has seen."""

    #: how many jobs the machine inserts at most (``make_state_machine`` sets it)
    jobs_max: ClassVar[int] = 10

    def __init__(self, store_factory: StoreFactory) -> None:
        super().__init__()
        self.clock = ManualClock()
        self.store = store_factory(self.clock)
        self.store.set_dlq_enabled(DLQ_QUEUE, True)
        self.routed = {DLQ_QUEUE}  # queues whose failures go to the dead-letter queue
        self.retention: dict[str, QueueSettings] = {}  # what configure_queue stored
        self.failed_seen: set[int] = set()  # failed jobs whose home was checked
        self.models: dict[int, Model] = {}
        self.callbacks: dict[str, int] = {}
        self.resolved: set[str] = set()
        self.paused: set[str] = set()
        self.concurrency_limits: dict[str, int] = {}  # what limit_queue stored, per queue
        self.key_limits: dict[str, int] = {}  # what limit_keys stored, per queue

    def _limit(self, queue: str, setting: str, limit: int | None) -> None:
        """Set or remove ``queue``'s ``concurrency_limit`` or ``key_concurrency_limit`` and
        remember it (``concurrency_limits``, ``key_limits``)."""
        settings = self.store.configure_queue(queue, **{setting: limit})  # type: ignore[arg-type]
        assert getattr(settings, setting) == limit
        kept = self.key_limits if setting == "key_concurrency_limit" else self.concurrency_limits
        if limit is None:
            kept.pop(queue, None)
        else:
            kept[queue] = limit
        self.retention[queue] = settings

    def _job(self, index: int) -> int:
        ids = sorted(self.models)
        return ids[index % len(ids)]

    def _lease(self, index: int) -> Lease:
        leases = [Lease(i, n) for i, m in sorted(self.models.items()) for n in m.leases]
        return leases[index % len(leases)]

    def _all(self) -> tuple[dict[int, Job], dict[int, Job]]:
        jobs = {j.id: j for j in self.store.list_jobs(limit=BATCH_SIZE_MAX)}
        dlq = {e.job.id: e.job for e in self.store.list_dlq(limit=BATCH_SIZE_MAX)}
        return jobs, dlq

    def _reset(self, job_id: int) -> None:
        model = self.models[job_id]
        model.claims_since_reset = model.snoozes_since_reset = 0

    def _forget(self, job_ids: set[int]) -> None:
        """Deleted jobs: nothing refers to them any more."""
        for job_id in job_ids:
            del self.models[job_id]
            self.failed_seen.discard(job_id)
        self.callbacks = {c: j for c, j in self.callbacks.items() if j not in job_ids}

    def _holder(self, key: str | None, jobs: dict[int, Job]) -> Job | None:
        """The job among ``jobs`` (a dead letter holds no key) that holds ``key``."""
        held = [j for j in jobs.values() if holds_unique_key(j) and j.unique_key == key]
        return held[0] if key is not None and held else None

    def _expect_unchanged(self, before: Job, what: str) -> None:
        after = self.store.get_job(before.id)
        assert after == before, f"refused {what} must change nothing: {before} -> {after}"

    def _expect_state(self, predicted: Job, what: str) -> Job:
        """The store holds exactly the job the domain decided, field for field; only a
        backoff's jitter (the store's own random source) may move ``run_at`` later."""
        after = self.store.get_job(predicted.id)
        expected = predicted
        if after.run_at != predicted.run_at and _jittered(predicted, after, self.clock.now()):
            expected = attrs.evolve(predicted, run_at=after.run_at)
        assert after == expected, f"{what}: store has {after}, the domain says {predicted}"
        return after

    def _fenced(
        self,
        lease: Lease,
        what: str,
        predict: Callable[[Job], Job],
        write: Callable[[], object],
    ) -> Job | None:
        """Run a lease-fenced write and check it against the domain's prediction."""
        before = self.store.get_job(lease.job_id)
        predicted: Job | None = None
        if before.run_lease == lease.run_lease:
            try:
                predicted = predict(before)
            except (IllegalTransition, CallbackNotFound):
                predicted = None
        result = write()
        if predicted is None:
            assert isinstance(result, Stale), f"{what} with {lease} must be stale: {result}"
            self._expect_unchanged(before, what)
            return None
        assert isinstance(result, Applied), f"{what} with {lease} must apply: {result}"
        return self._expect_state(predicted, what)
