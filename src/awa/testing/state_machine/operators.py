"""The operator's verbs: cancel, retry (taking a unique key back unless a job holds it),
retry from the dead-letter queue, pause and resume, configure a queue, cancel by unique key.

Each is checked against the transition table (``TRANSITIONS``): a refused verb changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from awa.domain import Job, JobState, NewJob, Unique, UniqueConflict, ValidationError, decisions
from awa.domain.transitions import TRANSITIONS, IllegalTransition, Trigger
from awa.domain.unique import holds_unique_key, retakes_unique_key
from awa.ports import BATCH_SIZE_MAX, QueueSettings
from awa.testing.state_machine.base import QUEUES, MachineBase

__all__ = ["OperatorRules"]


class OperatorRules(MachineBase):
    def _operator(self, job_id: int, trigger: Trigger, action: Callable[[], Job]) -> None:
        jobs, dlq = self._all()
        before = jobs.get(job_id) or dlq[job_id]
        allowed = (before.state, trigger) in TRANSITIONS and not (
            trigger is Trigger.CANCEL and job_id in dlq
        )
        holder = None
        if allowed and trigger is Trigger.OPERATOR_RETRY:
            retried = decisions.operator_retry(before, self.clock.now())
            owned = before if job_id in jobs else None  # a dead letter holds no key
            if retakes_unique_key(owned, retried):
                holder = self._holder(retried.unique_key, jobs)
        try:
            after = action()
        except IllegalTransition:
            assert not allowed, f"{trigger} of {before.state} job was refused"
            self._expect_unchanged(before, str(trigger))
            return
        except UniqueConflict as conflict:
            refused_for: int | None = conflict.job_id
        else:
            refused_for = None
        if refused_for is not None:
            assert holder is not None, f"{trigger} of job {job_id} refused, its key is free"
            assert refused_for == holder.id
            self._expect_unchanged(before, str(trigger))
            return
        assert holder is None, f"{trigger} took the key job {holder} holds"
        assert allowed, f"{trigger} of a {before.state} job was applied"
        now = self.clock.now()
        if trigger is Trigger.CANCEL:
            predicted = decisions.cancel(before, now).job
        else:
            predicted = decisions.operator_retry(before, now)
        assert after == self._expect_state(predicted, str(trigger))

    @precondition(lambda self: bool(self.models))
    @rule(index=st.integers(0, 200))
    def cancel(self, index: int) -> None:
        job_id = self._job(index)
        self._operator(job_id, Trigger.CANCEL, lambda: self.store.cancel(job_id))

    @precondition(lambda self: bool(self.models))
    @rule(index=st.integers(0, 200))
    def operator_retry(self, index: int) -> None:
        job_id = self._job(index)
        before = self.store.get_job(job_id)
        self._operator(job_id, Trigger.OPERATOR_RETRY, lambda: self.store.retry(job_id))
        if self.store.get_job(job_id) != before:
            self._reset(job_id)

    @rule(queue=st.sampled_from(QUEUES))
    def bulk_retry_from_dlq(self, queue: str) -> None:
        jobs, dlq = self._all()
        entries = sorted(
            (e for e in self.store.list_dlq(limit=BATCH_SIZE_MAX) if e.job.queue == queue),
            key=lambda e: (e.dlq_at, e.job.id),
        )
        expected, taken = set(), {j.unique_key for j in jobs.values() if holds_unique_key(j)}
        for entry in entries:  # each takes its key back, unless a job already holds it
            again = decisions.operator_retry(entry.job, self.clock.now())
            if holds_unique_key(again) and again.unique_key in taken:
                continue
            taken.add(again.unique_key)
            expected.add(entry.job.id)
        retried = self.store.bulk_retry_from_dlq(queue=queue)
        assert {j.id for j in retried} == expected
        now = self.clock.now()
        for job in retried:
            predicted = decisions.operator_retry(dlq[job.id], now)
            assert job == self._expect_state(predicted, "dead-letter retry")
            self._reset(job.id)

    @rule(queue=st.sampled_from(QUEUES), paused=st.sampled_from([True, False, False]))
    def pause_or_resume(self, queue: str, paused: bool) -> None:
        if paused:
            self.store.pause_queue(queue)
            self.paused.add(queue)
        else:
            self.store.resume_queue(queue)
            self.paused.discard(queue)

    @rule(
        queue=st.sampled_from(QUEUES),
        dlq_enabled=st.sampled_from([None, True, False]),
        finished_s=st.sampled_from([None, 60, 3600]),
        dlq_s=st.sampled_from([None, 60, 3600]),
        failed_s=st.sampled_from([None, None, 60, 3600]),
    )
    def configure_queue(
        self,
        queue: str,
        dlq_enabled: bool | None,
        finished_s: int | None,
        dlq_s: int | None,
        failed_s: int | None,
    ) -> None:
        before = self.retention.get(queue, QueueSettings(queue, dlq_enabled=queue in self.routed))
        try:
            settings = self.store.configure_queue(
                queue,
                dlq_enabled=dlq_enabled,
                finished_retention_s=finished_s,
                dlq_retention_s=dlq_s,
                failed_retention_s=failed_s,
            )
        except ValidationError:
            assert (dlq_enabled, finished_s, dlq_s, failed_s) == (None, None, None, None)
            return
        expected = attrs.evolve(
            before,
            paused=queue in self.paused,
            dlq_enabled=before.dlq_enabled if dlq_enabled is None else dlq_enabled,
            finished_retention_s=before.finished_retention_s
            if finished_s is None
            else float(finished_s),
            dlq_retention_s=before.dlq_retention_s if dlq_s is None else float(dlq_s),
            failed_retention_s=before.failed_retention_s if failed_s is None else float(failed_s),
        )
        assert settings == expected, f"{settings} stored, {expected} asked for"
        self.retention[queue] = settings
        (self.routed.add if settings.dlq_enabled else self.routed.discard)(queue)

    @rule(queue=st.sampled_from(QUEUES), limit=st.sampled_from([None, 1, 2, 3]))
    def limit_queue(self, queue: str, limit: int | None) -> None:
        """Set or remove a queue's fleet-wide concurrency limit, at any moment: below what
        runs, too (the claims that follow are held to it, ``WorkerRules._slots``)."""
        self._limit(queue, "concurrency_limit", limit)

    @rule(queue=st.sampled_from(QUEUES), limit=st.sampled_from([None, 1, 2]))
    def limit_keys(self, queue: str, limit: int | None) -> None:
        """Set or remove a queue's ``key_concurrency_limit`` at any moment, below what runs
        of a key too (``WorkerRules._claim`` holds the claims that follow to it)."""
        self._limit(queue, "key_concurrency_limit", limit)

    @precondition(lambda self: bool(self.models))
    @rule(key=st.sampled_from(["a", "b"]))
    def cancel_by_unique_key(self, key: str) -> None:
        jobs, _ = self._all()
        probe = NewJob(kind="machine", args={"key": key}, unique=Unique(by_args=["key"]))
        holder = self._holder(probe.unique_key_at(self.clock.now()), jobs)
        try:
            cancelled = self.store.cancel_by_unique_key(probe)
        except IllegalTransition:
            assert holder is not None, "nothing holds the key, yet something was refused"
            assert holder.state.is_terminal
            self._expect_unchanged(holder, "cancel of a finished holder")
            return
        if holder is None:
            assert cancelled is None, f"cancelled job {cancelled} though nothing holds the key"
            return
        assert cancelled is not None, f"job {holder.id} holds the key and was not cancelled"
        assert (cancelled.id, cancelled.state) == (holder.id, JobState.CANCELLED)
