"""The contract of fenced writes: heartbeats, and writes that arrive for an attempt that ended.

Every write to a live attempt names its lease; a heartbeat or finish for a superseded,
cancelled, rescued or unknown lease comes back as ``Stale`` with its reason and changes
nothing, and a batch reports each write in request order.
"""

from __future__ import annotations

from awa.adapters.memory import ManualClock
from awa.domain import Complete, Fail, Job, JobState, Lease, NewJob, RetryAfter
from awa.ports import Applied, ClaimStore, Finish, Heartbeat, Stale, StaleReason
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _one
from awa.testing.scenarios import STALENESS_S

__all__ = ["FencingContract"]


class FencingContract(StoreFixtures):
    """Writes are fenced by the lease; a stale write is a value and changes nothing."""

    def test_heartbeat_extends_the_claim_and_flushes_progress_and_metadata(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store, metadata={"a": 1})
        job = _claim_one(store)
        clock.advance(30)
        [result] = store.heartbeat(
            [Heartbeat(job.lease, progress={"percent": 50}, metadata={"b": 2})]
        )
        assert isinstance(result, Applied)
        got = store.get_job(job.id)
        assert got.heartbeat_at == clock.now()
        assert got.progress == {"percent": 50}
        assert got.metadata == {"a": 1, "b": 2}

    def test_heartbeat_reports_each_stale_lease_with_its_reason(self, store: ClaimStore) -> None:
        store.insert([NewJob(kind="k"), NewJob(kind="k")])
        ja = _claim_one(store)
        jb = _claim_one(store)
        store.cancel(jb.id)
        results = store.heartbeat(
            [
                Heartbeat(ja.lease),
                Heartbeat(Lease(ja.id, ja.run_lease + 1)),
                Heartbeat(jb.lease),
                Heartbeat(Lease(999_999, 1)),
            ]
        )
        assert isinstance(results[0], Applied)
        assert results[1] == Stale(Lease(ja.id, ja.run_lease + 1), StaleReason.LEASE_SUPERSEDED)
        assert results[2] == Stale(jb.lease, StaleReason.CANCELLED)
        assert results[3] == Stale(Lease(999_999, 1), StaleReason.NOT_FOUND)

    def test_finish_batches_report_each_result_in_order(self, store: ClaimStore) -> None:
        store.insert([NewJob(kind="k") for _ in range(3)])
        a, b, c = store.claim("default", limit=3)
        results = store.finish(
            [
                Finish(a.lease, Complete()),
                Finish(Lease(b.id, b.run_lease + 7), Complete()),
                Finish(c.lease, RetryAfter(1)),
            ]
        )
        assert isinstance(results[0], Applied)
        assert isinstance(results[1], Stale)
        assert isinstance(results[2], Applied)
        assert store.get_job(b.id).state is JobState.RUNNING

    def test_a_batch_naming_one_attempt_twice_applies_it_as_if_one_by_one(
        self, store: ClaimStore
    ) -> None:
        store.set_dlq_enabled("dead", True)
        store.insert([NewJob(kind="k"), NewJob(kind="k", queue="dead")])
        job, doomed = _claim_one(store), _claim_one(store, "dead")
        results = store.finish(
            [
                Finish(job.lease, Fail("ValueError: first")),
                Finish(job.lease, Complete()),
                Finish(doomed.lease, Fail("TerminalError: x", terminal=True)),
                Finish(doomed.lease, Complete()),
            ]
        )
        assert isinstance(results[0], Applied)
        assert results[1] == Stale(job.lease, StaleReason.STATE_CHANGED)
        assert isinstance(results[2], Applied)
        assert results[3] == Stale(doomed.lease, StaleReason.NOT_FOUND)  # dead-lettered just now
        assert store.get_job(job.id).state is JobState.RETRYABLE
        assert store.get_dlq_entry(doomed.id) is not None

    def test_a_heartbeat_batch_naming_one_attempt_twice_applies_both(
        self, store: ClaimStore
    ) -> None:
        _one(store)
        job = _claim_one(store)
        first, second = store.heartbeat(
            [Heartbeat(job.lease, progress={"step": 1}), Heartbeat(job.lease, progress={"step": 2})]
        )
        assert isinstance(first, Applied)
        assert isinstance(second, Applied)
        assert store.get_job(job.id).progress == {"step": 2}

    def test_late_finish_after_rescue_changes_nothing(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        first = _rescued_attempt(store, clock)
        clock.advance(3600)
        second = _claim_one(store)
        assert isinstance(_finish(store, second.lease, Complete()), Applied)
        after_second = store.get_job(first.id)
        late = _finish(store, first.lease, Fail("late failure"))
        assert late == Stale(first.lease, StaleReason.LEASE_SUPERSEDED)
        assert store.get_job(first.id) == after_second
        assert after_second.state is JobState.COMPLETED

    def test_late_finish_while_rescued_job_waits_changes_nothing(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        first = _rescued_attempt(store, clock)
        before = store.get_job(first.id)
        assert _finish(store, first.lease, Complete()) == Stale(
            first.lease, StaleReason.STATE_CHANGED
        )
        assert store.get_job(first.id) == before

    def test_finish_after_operator_cancel_is_ignored(self, store: ClaimStore) -> None:
        _one(store)
        job = _claim_one(store)
        cancelled = store.cancel(job.id)
        assert cancelled.state is JobState.CANCELLED
        assert _finish(store, job.lease, Complete()) == Stale(job.lease, StaleReason.CANCELLED)
        assert store.get_job(job.id) == cancelled


def _rescued_attempt(store: ClaimStore, clock: ManualClock) -> Job:
    """A job's first attempt as claimed, after its heartbeat went stale and the rescue ended
    it: the lease a late finish would still carry."""
    _one(store)
    first = _claim_one(store)
    clock.advance(STALENESS_S + 1)
    store.rescue(staleness_s=STALENESS_S)
    return first
