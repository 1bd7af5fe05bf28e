"""The contract of a row the store cannot read back: it never stops anything but its own job.

A row written by hand, by another version or by a bug may hold a value no reader takes (a time
outside Python's range, JSON Python cannot read). Every store reads such a job all the same
(``awa.adapters._unreadable``): the column holds the nearest value that can be read and the
job names it in ``unreadable``. A claim fails that job alone with a terminal error quoting the
column; it is listed, got, cancelled and counted like any other; maintenance goes on around
it; and a dead letter holding one is not restored with the stand-in value.

Each adapter's tests supply ``plant_unreadable(job_id, column, too_late=False)``, which writes
such a value into a stored job's ``column`` (the way only that store's storage allows); the
memory store's is ``MemoryStore.plant_unreadable``. The columns planted are ``run_at``
(``too_late``: after the readable range; otherwise before it), ``heartbeat_at``,
``finalized_at``, ``args``, ``metadata`` and ``errors``. Without it the area is skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock, MemoryStore
from awa.domain import JobState, NewJob, ValidationError
from awa.domain.defaults import UNREADABLE_JOB
from awa.domain.validation import INSTANT_MAX, INSTANT_MIN
from awa.ports import ClaimStore, SummarizesQueues
from awa.testing.contract._helpers import StoreFixtures, _one
from awa.testing.scenarios import drive_to

__all__ = ["Plant", "UnreadableRowContract"]

#: ``plant_unreadable(job_id, column, too_late=False)``
Plant = Callable[..., object]


class UnreadableRowContract(StoreFixtures):
    """A row the store cannot read back fails its own job and nothing else."""

    @pytest.fixture
    def plant_unreadable(self, store: ClaimStore) -> Plant:
        if isinstance(store, MemoryStore):
            return store.plant_unreadable
        pytest.skip(f"the tests of {type(store).__name__} supply no plant_unreadable fixture")

    def test_a_claim_fails_a_job_it_cannot_read_and_hands_out_the_rest(
        self, store: ClaimStore, plant_unreadable: Plant
    ) -> None:
        jobs = store.insert([NewJob(kind="work", args={"n": n}) for n in range(8)])
        bad = jobs[3]
        plant_unreadable(bad.id, "args")
        claimed = store.claim("default", limit=10)
        assert sorted(job.id for job in claimed) == sorted(j.id for j in jobs if j is not bad)
        assert all(not job.unreadable for job in claimed)
        failed = store.get_job(bad.id)
        assert failed.state is JobState.FAILED
        [error] = failed.errors
        assert error.terminal
        assert error.error.startswith(f"{UNREADABLE_JOB}: args holds ")
        assert [column.column for column in failed.unreadable] == ["args"]

    def test_a_run_at_before_the_readable_range_is_due_and_its_job_fails_at_claim(
        self, store: ClaimStore, clock: ManualClock, plant_unreadable: Plant
    ) -> None:
        innocent = _one(store)
        bad = _one(store)
        plant_unreadable(bad.id, "run_at")
        read = store.get_job(bad.id)
        assert read.run_at == INSTANT_MIN
        assert [(c.column, bool(c.raw), bool(c.reason)) for c in read.unreadable] == [
            ("run_at", True, True)
        ]
        assert [job.id for job in store.claim("default", limit=10)] == [innocent.id]
        failed = store.get_job(bad.id)
        assert failed.state is JobState.FAILED
        assert "run_at holds" in failed.errors[-1].error

    def test_a_run_at_after_the_readable_range_never_comes_due_and_can_be_listed_and_cancelled(
        self, store: ClaimStore, clock: ManualClock, plant_unreadable: Plant
    ) -> None:
        later = _one(store, run_at=clock.now() + timedelta(hours=1))
        plant_unreadable(later.id, "run_at", too_late=True)
        clock.advance(7200)
        assert store.promote() == []
        assert store.claim("default", limit=10) == []
        [listed] = store.list_jobs()
        assert (listed.id, listed.run_at, listed.state) == (later.id, INSTANT_MAX, later.state)
        assert [column.column for column in listed.unreadable] == ["run_at"]
        [summary] = store.list_job_summaries()
        assert (summary.id, summary.run_at) == (later.id, INSTANT_MAX)
        assert [column.column for column in summary.unreadable] == ["run_at"]
        assert store.count_jobs(state=JobState.SCHEDULED) == 1
        store.queue_stats()
        assert store.cancel(later.id).state is JobState.CANCELLED

    def test_maintenance_goes_on_around_jobs_it_cannot_read(
        self, store: ClaimStore, clock: ManualClock, plant_unreadable: Plant
    ) -> None:
        running = drive_to(store, clock, JobState.RUNNING).job
        plant_unreadable(running.id, "metadata")
        lost = drive_to(store, clock, JobState.RUNNING, queue="lost").job
        plant_unreadable(lost.id, "heartbeat_at")
        done = drive_to(store, clock, JobState.COMPLETED, queue="done").job
        plant_unreadable(done.id, "finalized_at")
        failed = drive_to(store, clock, JobState.RETRYABLE, queue="later").job
        plant_unreadable(failed.id, "errors")
        due = _one(store, queue="due", run_at=clock.now() + timedelta(seconds=5))
        plant_unreadable(due.id, "metadata")
        clock.advance(3600)
        rescued = store.rescue(staleness_s=60)
        assert {r.job.id for r in rescued} == {running.id, lost.id}
        assert {job.id for job in store.promote()} >= {due.id}
        assert store.delete_finished(older_than_s=60) >= 1
        store.expire_dlq(older_than_s=60)
        store.queue_stats()
        if isinstance(store, SummarizesQueues):
            store.summarize_queues()
        assert {job.id for job in store.list_jobs(limit=100)} >= {running.id, lost.id, due.id}

    def test_a_dead_letter_it_cannot_read_is_listed_and_never_restored_with_a_stand_in(
        self, store: ClaimStore, clock: ManualClock, plant_unreadable: Plant
    ) -> None:
        store.set_dlq_enabled("dead", True)
        bad = drive_to(store, clock, JobState.FAILED, queue="dead").job
        good = drive_to(store, clock, JobState.FAILED, queue="dead").job
        plant_unreadable(bad.id, "args")
        plant_unreadable(bad.id, "finalized_at", too_late=True)
        listed = {entry.job.id: entry.job for entry in store.list_dlq()}
        assert set(listed) == {bad.id, good.id}
        summaries = {s.id: s for s in store.list_job_summaries(home="dlq")}
        assert summaries[bad.id].finalized_at == INSTANT_MAX
        assert [column.column for column in summaries[bad.id].unreadable] == ["finalized_at"]
        assert [column.column for column in listed[bad.id].unreadable] == ["args", "finalized_at"]
        with pytest.raises(ValidationError, match=rf"^job {bad.id} cannot be retried .* args"):
            store.retry_from_dlq(bad.id)
        assert [job.id for job in store.bulk_retry_from_dlq(queue="dead")] == [good.id]
        entry = store.get_dlq_entry(bad.id)
        assert entry is not None
        assert [column.column for column in entry.job.unreadable] == ["args", "finalized_at"]

    def test_a_retried_job_that_still_cannot_be_read_fails_again_at_claim(
        self, store: ClaimStore, plant_unreadable: Plant
    ) -> None:
        bad = _one(store)
        plant_unreadable(bad.id, "args")
        assert store.claim("default", limit=1) == []
        retried = store.retry(bad.id)
        assert retried.state is JobState.AVAILABLE
        assert store.claim("default", limit=1) == []  # still cannot be read: failed again
        again = store.get_job(bad.id)
        assert again.state is JobState.FAILED
        assert len(again.errors) == 2
