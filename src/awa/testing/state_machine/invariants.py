"""What must hold after every step, whatever the machine did: one home per job, one holder
per unique key, no job lost, attempts and leases as the model counted them, a failed job where
its queue's routing sent it, and every field allowed by its state."""

from __future__ import annotations

from hypothesis.stateful import invariant

from awa.domain import DlqReason, JobState, holds_unique_key
from awa.ports import BATCH_SIZE_MAX
from awa.testing.laws import field_disagreements
from awa.testing.state_machine.base import MachineBase

__all__ = ["Invariants"]

_DLQ_REASONS = {reason.value for reason in DlqReason}


class Invariants(MachineBase):
    @invariant()
    def laws_hold(self) -> None:
        jobs, dlq = self._all()
        assert not set(jobs) & set(dlq), "a job is in two homes"
        held = [str(j.unique_key) for j in jobs.values() if holds_unique_key(j)]
        assert len(held) == len(set(held)), f"two jobs hold one unique key: {sorted(held)}"
        assert set(jobs) | set(dlq) == set(self.models), "a job was lost"
        for entry in self.store.list_dlq(limit=BATCH_SIZE_MAX):
            assert entry.job.state is JobState.FAILED
            assert entry.reason in _DLQ_REASONS
        for job in (*jobs.values(), *dlq.values()):
            model = self.models[job.id]
            assert job.unique_key == model.unique_key, "a job's unique key changed"
            assert job.run_lease == model.max_run_lease, "run_lease moved without a claim"
            assert job.attempt == model.claims_since_reset - model.snoozes_since_reset, (
                f"job {job.id}: attempt {job.attempt} but {model.claims_since_reset} claims"
                f" and {model.snoozes_since_reset} snoozes since the last reset"
            )
            assert 0 <= job.attempt <= job.max_attempts
            if job.state.is_live:
                assert job.run_lease >= 1
                assert job.attempt >= 1
            else:
                assert job.callback_id is None
                assert job.deadline_at is None
            if job.state is JobState.WAITING_EXTERNAL:
                assert job.callback_id is not None
        # a job that has just failed went where its queue's routing said, at that moment
        failed = {j.id: j for j in (*jobs.values(), *dlq.values()) if j.state is JobState.FAILED}
        for job_id in failed.keys() - self.failed_seen:
            routed = failed[job_id].queue in self.routed
            assert (job_id in dlq) == routed, (
                f"job {job_id} failed on queue {failed[job_id].queue} (DLQ"
                f" {'on' if routed else 'off'}) and is {'' if job_id in dlq else 'not '}in it"
            )
        self.failed_seen = set(failed)

    @invariant()
    def fields_agree_with_states(self) -> None:
        """No path leaves a field its state disallows (``awa.testing.laws``)."""
        jobs, dlq = self._all()
        problems = [p for j in (*jobs.values(), *dlq.values()) for p in field_disagreements(j)]
        assert not problems, "; ".join(problems)
