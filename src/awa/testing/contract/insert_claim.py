"""The contract of ``insert`` and ``claim``: how jobs enter the store and start an attempt.

Insert order, defaults and verbatim storage; claim order (with priority aging too), the new
lease, limits, paused queues, and that concurrent claims never share a job.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import JobState, NewJob, RetryAfter, ValidationError
from awa.ports import BATCH_SIZE_MAX, Applied, ClaimStore
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _one

__all__ = ["InsertClaimContract"]


class InsertClaimContract(StoreFixtures):
    """``insert`` and ``claim``: jobs in, attempts started, never one job to two workers."""

    def test_insert_makes_jobs_available_now_and_scheduled_later(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        now_job, later_job = store.insert(
            [
                NewJob(kind="a", args={"n": 1}),
                NewJob(kind="b", run_at=clock.now() + timedelta(seconds=30)),
            ]
        )
        assert now_job.state is JobState.AVAILABLE
        assert later_job.state is JobState.SCHEDULED
        assert later_job.id > now_job.id
        assert (now_job.attempt, now_job.run_lease, now_job.priority) == (0, 0, 2)
        assert now_job.max_attempts == 25
        assert now_job.args == {"n": 1}
        assert store.get_job(now_job.id) == now_job

    def test_insert_keeps_hostile_text_verbatim(self, store: ClaimStore) -> None:
        args = {"q": "'; DROP TABLE jobs; --", "u": "żółć 🚀", "nested": [{"a": None}, 1.5]}
        job = _one(store, args=args, tags=["it's", "--x"], metadata={"k": '"quoted"'})
        got = store.get_job(job.id)
        assert got.args == args
        assert got.tags == ("it's", "--x")
        assert got.metadata == {"k": '"quoted"'}

    def test_a_batch_of_the_largest_size_is_taken(self, store: ClaimStore) -> None:
        created = store.insert([NewJob(kind="k", queue="full")] * BATCH_SIZE_MAX)
        assert len(created) == BATCH_SIZE_MAX
        assert len(store.claim("full", limit=BATCH_SIZE_MAX)) == BATCH_SIZE_MAX

    def test_insert_rejects_values_that_are_not_new_jobs(self, store: ClaimStore) -> None:
        with pytest.raises(ValidationError):
            store.insert([{"kind": "x"}])  # type: ignore[list-item]
        assert store.list_jobs() == []

    def test_claim_orders_by_priority_then_run_at_then_id(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        low = _one(store, priority=4)
        first = _one(store, priority=1)
        second = _one(store, priority=1)
        normal = _one(store, priority=2)
        claimed = store.claim("default", limit=10)
        assert [j.id for j in claimed] == [first.id, second.id, normal.id, low.id]

    def test_claim_starts_an_attempt_with_a_new_lease(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        _one(store)
        job = _claim_one(store, deadline_duration_s=60)
        assert job.state is JobState.RUNNING
        assert (job.attempt, job.run_lease) == (1, 1)
        assert job.attempted_at == job.heartbeat_at == clock.now()
        assert job.deadline_at == clock.now() + timedelta(seconds=60)

    def test_claim_with_zero_deadline_sets_no_deadline(self, store: ClaimStore) -> None:
        _one(store)
        assert _claim_one(store, deadline_duration_s=0).deadline_at is None

    def test_claim_respects_limit_and_never_hands_out_a_job_twice(self, store: ClaimStore) -> None:
        store.insert([NewJob(kind="k") for _ in range(7)])
        first = store.claim("default", limit=3)
        second = store.claim("default", limit=10)
        assert len(first) == 3
        assert len(second) == 4
        assert not {j.id for j in first} & {j.id for j in second}
        assert store.claim("default", limit=10) == []

    def test_concurrent_claims_share_no_job(self, store: ClaimStore) -> None:
        store.insert([NewJob(kind="k") for _ in range(200)])
        seen: list[int] = []
        lock = threading.Lock()

        def worker() -> None:
            while batch := store.claim("default", limit=7):
                with lock:
                    seen.extend(j.id for j in batch)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(seen) == 200
        assert len(set(seen)) == 200

    @pytest.mark.parametrize("aging_s", [0.0, 30.0], ids=["plain", "aged"])
    def test_claim_takes_due_scheduled_and_retryable_jobs_directly(
        self, store: ClaimStore, clock: ManualClock, aging_s: float
    ) -> None:
        _one(store, kind="busy")
        _claim_one(store)  # the oldest job, still running: never claimed again
        scheduled = _one(store, run_at=clock.now() + timedelta(seconds=10))
        _one(store, kind="retry_me")
        running = _claim_one(store)
        assert isinstance(_finish(store, running.lease, RetryAfter(5)), Applied)
        assert store.claim("default", limit=10, priority_aging_s=aging_s) == []
        clock.advance(10)
        claimed = store.claim("default", limit=2, priority_aging_s=aging_s)
        assert {j.id for j in claimed} == {scheduled.id, running.id}
        assert all(j.state is JobState.RUNNING for j in claimed)

    def test_claim_skips_paused_queue_until_resumed(self, store: ClaimStore) -> None:
        _one(store, queue="email")
        store.pause_queue("email")
        assert store.claim("email", limit=5) == []
        store.resume_queue("email")
        assert len(store.claim("email", limit=5)) == 1

    def test_claim_rejects_bad_arguments(self, store: ClaimStore) -> None:
        with pytest.raises(ValidationError):
            store.claim("Bad Queue!", limit=1)
        with pytest.raises(ValidationError):
            store.claim("default", limit=0)
        with pytest.raises(ValidationError):
            store.claim("default", limit=1, deadline_duration_s=-1)

    def test_priority_aging_lets_a_long_waiting_job_overtake_without_rewriting_it(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        [old] = store.insert([NewJob(kind="old", priority=4)])
        clock.advance(250)  # 2 whole steps of 100 s: effective priority 2
        store.insert([NewJob(kind="fresh", priority=3), NewJob(kind="tie", priority=2)])
        assert store.get_job(old.id).priority == 4
        order = [j.kind for j in store.claim("default", limit=3, priority_aging_s=100)]
        assert order == ["old", "tie", "fresh"]  # priority 2 by age, and older than "tie"
        assert [j.priority for j in store.list_jobs(kind="old")] == [4]

    def test_priority_aging_never_goes_past_the_highest_priority(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.insert([NewJob(kind="ancient", priority=3)])
        clock.advance(10_000)
        store.insert([NewJob(kind="urgent", priority=1)])
        clock.advance(1)
        order = [j.kind for j in store.claim("default", limit=2, priority_aging_s=1)]
        assert order == ["ancient", "urgent"]  # both 1: the older one first
        store.insert([NewJob(kind="a", priority=4), NewJob(kind="b", priority=1)])
        assert [j.kind for j in store.claim("default", limit=2, priority_aging_s=0)] == ["b", "a"]

    def test_priority_aging_counts_whole_steps_and_stops_at_the_highest_priority(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        def order(older: int, gap_s: float, newer: int, wait_s: float) -> list[str]:
            store.insert([NewJob(kind="older", priority=older)])
            clock.advance(gap_s)
            store.insert([NewJob(kind="newer", priority=newer)])
            clock.advance(wait_s)
            return [j.kind for j in store.claim("default", limit=2, priority_aging_s=100)]

        # exactly one step waited counts: both at priority 1, so the older goes first
        assert order(2, 50, 1, 50) == ["older", "newer"]
        # only whole steps count: 2 steps and 1.9 steps both leave priority 2
        assert order(4, 10, 3, 190) == ["older", "newer"]
        # never past the highest: 4 - 6 steps and 1 - 5 steps are both priority 1
        assert order(4, 100, 1, 500) == ["older", "newer"]

    def test_priority_aging_takes_the_oldest_of_a_priority_and_respects_a_pause(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        first, *_ = store.insert([NewJob(kind="k", priority=2) for _ in range(3)])
        clock.advance(1)
        store.insert([NewJob(kind="k", priority=2) for _ in range(3)])
        store.pause_queue("other")  # another queue's pause stops nobody here
        [claimed] = store.claim("default", limit=1, priority_aging_s=60)
        assert claimed.id == first.id
        store.pause_queue("default")
        assert store.claim("default", limit=5, priority_aging_s=60) == []

    def test_priority_aging_looks_past_the_first_jobs_of_each_priority(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.insert([NewJob(kind="old", priority=4, args={"n": n}) for n in range(3)])
        clock.advance(60)
        store.insert([NewJob(kind="new", priority=1, args={"n": n}) for n in range(3)])
        clock.advance(1)
        got = [(j.kind, j.args["n"]) for j in store.claim("default", limit=4, priority_aging_s=20)]
        assert got == [("old", 0), ("old", 1), ("old", 2), ("new", 0)]
