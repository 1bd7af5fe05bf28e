"""Time and maintenance: the clock moves, rescues and promotions run, and retention deletes
finished jobs and expires dead letters by each queue's settings."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import strategies as st
from hypothesis.stateful import rule

from awa.domain import JobState, decisions, rescue_cause
from awa.domain.retention import RETENTION_OF, Retention
from awa.ports import BATCH_SIZE_MAX
from awa.testing.state_machine.base import STALENESS_S, MachineBase, NoJitter

__all__ = ["MaintenanceRules"]


class MaintenanceRules(MachineBase):
    @rule(seconds=st.sampled_from([1, 10, 60, 100, 700, 4000]))
    def advance_clock(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @rule()
    def rescue(self) -> None:
        now = self.clock.now()
        jobs, _ = self._all()
        expected = {
            j.id: decisions.rescue(j, cause, now, NoJitter()).job
            for j in jobs.values()
            if (cause := rescue_cause(j, now, STALENESS_S)) is not None
        }
        rescued = self.store.rescue(staleness_s=STALENESS_S, limit=BATCH_SIZE_MAX)
        assert sorted(r.job.id for r in rescued) == sorted(expected), "rescued the wrong jobs"
        for r in rescued:
            self._expect_state(expected[r.job.id], f"rescue ({r.cause.name})")
            assert r.job.errors[-1].error == r.cause.error

    @rule()
    def promote(self) -> None:
        now = self.clock.now()
        jobs, _ = self._all()
        due = {
            j.id
            for j in jobs.values()
            if j.state in (JobState.SCHEDULED, JobState.RETRYABLE) and j.run_at <= now
        }
        promoted = self.store.promote(limit=BATCH_SIZE_MAX)
        assert {j.id for j in promoted} == due
        for job in promoted:
            assert job == self._expect_state(decisions.promote(jobs[job.id], now), "promote")

    def _kept_s(self, queue: str, default_s: float, setting: str) -> float:
        """How long ``queue`` keeps what its ``setting`` (a ``QueueSettings`` retention)
        covers: its own, or the default."""
        settings = self.retention.get(queue)
        own = None if settings is None else getattr(settings, setting)
        return default_s if own is None else float(own)

    @rule(
        older_than_s=st.sampled_from([0, 100, 5000]),
        failed_older_than_s=st.sampled_from([None, 0, 100, 5000]),
    )
    def delete_finished(self, older_than_s: int, failed_older_than_s: int | None) -> None:
        """Exactly the finished jobs past their queue's retention go (one at the very
        cutoff may go or stay), and nothing else: completed jobs held to the queue's
        finished retention, failed and cancelled ones to its failed one
        (``awa.domain.retention``)."""
        now = self.clock.now()
        jobs, _ = self._all()
        default_s = {
            Retention.COMPLETED: older_than_s,
            Retention.FAILED: older_than_s if failed_older_than_s is None else failed_older_than_s,
        }
        past, at_cutoff = set(), set()
        for job in jobs.values():
            if not job.state.is_terminal or job.finalized_at is None:
                continue
            retention = RETENTION_OF[job.state]
            kept_s = self._kept_s(job.queue, default_s[retention], retention.value)
            cutoff = now - timedelta(seconds=kept_s)
            if job.finalized_at < cutoff:
                past.add(job.id)
            elif job.finalized_at == cutoff:
                at_cutoff.add(job.id)
        deleted = self.store.delete_finished(
            older_than_s=older_than_s,
            failed_older_than_s=failed_older_than_s,
            limit=BATCH_SIZE_MAX,
        )
        after, _ = self._all()
        gone = set(jobs) - set(after)
        assert past <= gone <= past | at_cutoff, f"deleted {gone}, expected {past}"
        assert deleted == len(gone)
        self._forget(gone)

    @rule(older_than_s=st.sampled_from([0, 100, 5000]))
    def expire_dlq(self, older_than_s: int) -> None:
        """Row 21 by retention: exactly the dead letters past their queue's retention."""
        now = self.clock.now()
        entries = self.store.list_dlq(limit=BATCH_SIZE_MAX)
        past, at_cutoff = set(), set()
        for entry in entries:
            kept_s = self._kept_s(entry.job.queue, older_than_s, "dlq_retention_s")
            cutoff = now - timedelta(seconds=kept_s)
            if entry.dlq_at < cutoff:
                past.add(entry.job.id)
            elif entry.dlq_at == cutoff:
                at_cutoff.add(entry.job.id)
        expired = self.store.expire_dlq(older_than_s=older_than_s, limit=BATCH_SIZE_MAX)
        _, after = self._all()
        gone = {entry.job.id for entry in entries} - set(after)
        assert past <= gone <= past | at_cutoff, f"expired {gone}, expected {past}"
        assert expired == len(gone)
        self._forget(gone)
