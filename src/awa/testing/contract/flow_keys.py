"""The contract of flow control per key: ``concurrency_key`` with ``key_concurrency_limit``
and ``key_rate_limit``, and ``ordering_key``.

A queue's key limits hold for each ``concurrency_key`` of the queue apart: at most
``key_concurrency_limit`` live attempts per key, and a token bucket per key. A claim of such a
queue takes its keys in turn (the key-less jobs as one more key), so one key with many jobs
does not hold back keys with few, and turns go on from claim to claim. Jobs of one
``ordering_key`` run one at a time in insert order, on any queue: only the key's oldest
unfinished job may start, and only while no attempt of the key is live
(``awa.domain.flow_claims``). The time is the store's clock, so the rate stories run on the
suite's ``ManualClock``.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from awa.adapters.memory import ManualClock
from awa.domain import (
    Complete,
    CompleteCallback,
    Fail,
    Job,
    JobState,
    NewJob,
    RetryAfter,
    Schedule,
    Snooze,
    ValidationError,
)
from awa.domain.flow import RateLimit
from awa.ports import Applied, ClaimStore, Finish, Heartbeat, QueueSettings
from awa.testing.contract._helpers import StoreFixtures, _finish, _park

__all__ = ["FlowKeysContract"]


def _keyed(store: ClaimStore, queue: str, *keys: str | None) -> list[Job]:
    return store.insert([NewJob(kind="k", queue=queue, concurrency_key=key) for key in keys])


def _ordered(store: ClaimStore, queue: str, *keys: str | None) -> list[Job]:
    return store.insert([NewJob(kind="k", queue=queue, ordering_key=key) for key in keys])


def _live_by_key(store: ClaimStore, queue: str) -> Counter[str | None]:
    live = [
        job
        for state in (JobState.RUNNING, JobState.WAITING_EXTERNAL)
        for job in store.list_jobs(state=state, queue=queue, limit=1000)
    ]
    return Counter(job.concurrency_key for job in live)


def _ids(jobs: list[Job]) -> list[int]:
    return [job.id for job in jobs]


class FlowKeysContract(StoreFixtures):
    """Key limits and ordering keys, held by every claim of the store."""

    # -- the settings -------------------------------------------------------------------------
    def test_key_limits_are_stored_beside_the_queue_limits_and_none_removes_them(
        self, store: ClaimStore
    ) -> None:
        settings = store.configure_queue(
            "api", key_concurrency_limit=2, key_rate_limit=(0.5, 3), concurrency_limit=9
        )
        assert settings == QueueSettings(
            "api", concurrency_limit=9, key_concurrency_limit=2, key_rate_limit=RateLimit(0.5, 3)
        )
        assert store.configure_queue("api", rate_limit=(1, 1)).key_concurrency_limit == 2
        settings = store.configure_queue("api", key_concurrency_limit=None)
        assert (settings.key_concurrency_limit, settings.key_rate_limit) == (
            None,
            RateLimit(0.5, 3),
        )
        settings = store.configure_queue("api", key_rate_limit=None)
        assert settings == QueueSettings("api", concurrency_limit=9, rate_limit=RateLimit(1, 1))
        [stats] = [s for s in store.queue_stats() if s.queue == "api"]
        assert (stats.key_concurrency_limit, stats.key_rate_limit) == (None, None)

    def test_queue_stats_show_the_key_limits(self, store: ClaimStore) -> None:
        store.configure_queue("api", key_concurrency_limit=4, key_rate_limit=(2, 5))
        [stats] = [s for s in store.queue_stats() if s.queue == "api"]
        assert (stats.key_concurrency_limit, stats.key_rate_limit) == (4, RateLimit(2, 5))

    @pytest.mark.parametrize(
        ("setting", "value"),
        [
            ("key_concurrency_limit", 0),
            ("key_concurrency_limit", -1),
            ("key_concurrency_limit", 2.5),
            ("key_concurrency_limit", True),
            ("key_rate_limit", (float("nan"), 1)),
            ("key_rate_limit", (1, 0)),
            ("key_rate_limit", (0, 1)),
            ("key_rate_limit", 5),
        ],
    )
    def test_a_bad_key_limit_is_refused_in_one_line_and_changes_nothing(
        self, store: ClaimStore, setting: str, value: object
    ) -> None:
        store.configure_queue("api", key_concurrency_limit=3)
        with pytest.raises(ValidationError, match=setting) as refused:
            store.configure_queue("api", **{setting: value})  # type: ignore[arg-type]
        assert "\n" not in str(refused.value)
        [stats] = [s for s in store.queue_stats() if s.queue == "api"]
        assert (stats.key_concurrency_limit, stats.key_rate_limit) == (3, None)

    @pytest.mark.parametrize("field", ["concurrency_key", "ordering_key"])
    @pytest.mark.parametrize("key", ["", "x" * 129, 42, "a\x00b"])
    def test_a_bad_key_is_refused_in_one_line_and_one_bad_job_writes_no_job(
        self, store: ClaimStore, field: str, key: object
    ) -> None:
        with pytest.raises(ValidationError, match=field) as refused:
            store.insert([NewJob(kind="k", queue="api"), NewJob(kind="k", **{field: key})])  # type: ignore[arg-type]
        assert "\n" not in str(refused.value)
        assert store.list_jobs(queue="api") == []

    # -- the keys, stored ---------------------------------------------------------------------
    def test_keys_are_kept_by_insert_claim_listing_and_the_dead_letter_queue(
        self, store: ClaimStore
    ) -> None:
        longest = "k" * 128
        store.set_dlq_enabled("api", True)
        [job] = store.insert(
            [NewJob(kind="k", queue="api", concurrency_key="tenant-ü", ordering_key=longest)]
        )
        assert (job.concurrency_key, job.ordering_key) == ("tenant-ü", longest)
        got = store.get_job(job.id)
        assert got is not None
        assert (got.concurrency_key, got.ordering_key) == ("tenant-ü", longest)
        [listed] = store.list_jobs(queue="api")
        assert (listed.concurrency_key, listed.ordering_key) == ("tenant-ü", longest)
        [claimed] = store.claim("api", limit=1)
        assert (claimed.concurrency_key, claimed.ordering_key) == ("tenant-ü", longest)
        _finish(store, claimed.lease, Fail("gone", terminal=True))
        entry = store.get_dlq_entry(job.id)
        assert entry is not None
        assert (entry.job.concurrency_key, entry.job.ordering_key) == ("tenant-ü", longest)
        store.retry_from_dlq(job.id)
        back = store.get_job(job.id)
        assert back is not None
        assert (back.concurrency_key, back.ordering_key) == (
            "tenant-ü",
            longest,
        )

    def test_every_answer_about_a_keyed_job_carries_its_keys(self, store: ClaimStore) -> None:
        store.insert(
            [
                NewJob(kind="k", queue="api", concurrency_key="c", ordering_key=f"o{n}")
                for n in range(4)
            ]
        )
        jobs = store.claim("api", limit=4)
        answers = [
            *store.heartbeat([Heartbeat(jobs[0].lease)]),
            # completions alone, each with the job as claimed: a worker's batch, as it sends it
            *store.finish([Finish(job.lease, Complete(), claimed=job) for job in jobs[:2]]),
            *store.finish([Finish(jobs[2].lease, Complete())]),
            *store.finish([Finish(jobs[3].lease, RetryAfter(60), claimed=jobs[3])]),
        ]
        for answer in answers:
            assert isinstance(answer, Applied)
            assert answer.job.concurrency_key == "c"
            assert answer.job.ordering_key is not None

    def test_a_periodic_jobs_keys_go_with_every_fire(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        job = NewJob(kind="tick", queue="periodic", concurrency_key="c", ordering_key="o")
        [record] = store.register_schedules([Schedule(name="tick", cron="* * * * *", job=job)])
        assert (record.schedule.job.concurrency_key, record.schedule.job.ordering_key) == (
            "c",
            "o",
        )
        assert store.list_schedules() == [record]
        clock.set(clock.now().replace(second=0, microsecond=0) + timedelta(minutes=1, seconds=5))
        [plan] = store.plan_fires().plans
        [fired] = store.fire(plan) or []
        assert (fired.concurrency_key, fired.ordering_key) == ("c", "o")

    # -- concurrency per key ------------------------------------------------------------------
    def test_no_key_has_more_live_attempts_than_the_key_limit(self, store: ClaimStore) -> None:
        store.configure_queue("api", key_concurrency_limit=2)
        _keyed(store, "api", *["a"] * 5, *["b"] * 5)
        claimed = store.claim("api", limit=10)
        assert Counter(job.concurrency_key for job in claimed) == {"a": 2, "b": 2}
        assert store.claim("api", limit=10) == []
        _finish(store, claimed[0].lease, Complete())
        [next_one] = store.claim("api", limit=10)
        assert next_one.concurrency_key == claimed[0].concurrency_key
        assert max(_live_by_key(store, "api").values()) == 2

    def test_jobs_without_a_key_are_held_only_by_the_queue_limits(self, store: ClaimStore) -> None:
        store.configure_queue("api", key_concurrency_limit=1)
        _keyed(store, "api", *[None] * 6, "a", "a")
        claimed = store.claim("api", limit=10)
        assert Counter(job.concurrency_key for job in claimed) == {None: 6, "a": 1}

    def test_without_key_limits_a_key_limits_nothing(self, store: ClaimStore) -> None:
        store.configure_queue("api", concurrency_limit=10)
        _keyed(store, "api", *["a"] * 4)
        assert len(store.claim("api", limit=10)) == 4
        _keyed(store, "free", *["a"] * 4)
        assert len(store.claim("free", limit=10)) == 4

    def test_one_key_is_one_queues_own(self, store: ClaimStore) -> None:
        store.configure_queue("api", key_concurrency_limit=1)
        store.configure_queue("mail", key_concurrency_limit=1)
        _keyed(store, "api", "t", "t")
        _keyed(store, "mail", "t", "t")
        assert len(store.claim("api", limit=5)) == 1
        assert len(store.claim("mail", limit=5)) == 1

    def test_queue_and_key_limits_hold_together(self, store: ClaimStore) -> None:
        store.configure_queue("api", concurrency_limit=3, key_concurrency_limit=2)
        _keyed(store, "api", *["a"] * 4, *["b"] * 4)
        claimed = store.claim("api", limit=10)
        assert len(claimed) == 3
        assert max(Counter(job.concurrency_key for job in claimed).values()) == 2

    @pytest.mark.parametrize("key_rate", [None, (100.0, 100)], ids=["turns", "with-a-key-rate"])
    def test_a_parked_attempt_holds_its_keys_slot_and_a_rescue_gives_it_back(
        self, store: ClaimStore, clock: ManualClock, key_rate: tuple[float, int] | None
    ) -> None:
        store.configure_queue("api", key_concurrency_limit=1, key_rate_limit=key_rate)
        _keyed(store, "api", "a", "a")
        [first] = store.claim("api", limit=5)
        _park(store, first, timeout_s=600)
        assert store.count_jobs(state=JobState.WAITING_EXTERNAL, queue="api") == 1
        assert store.claim("api", limit=5) == []
        clock.advance(601)
        assert len(store.rescue(staleness_s=10_000)) == 1  # the callback timed out
        assert len(store.claim("api", limit=5)) == 1

    def test_a_big_key_does_not_starve_small_keys(self, store: ClaimStore) -> None:
        store.configure_queue("api", key_concurrency_limit=5)
        _keyed(store, "api", *["big"] * 200)  # inserted first: the oldest jobs
        _keyed(store, "api", *[f"small-{n:02}" for n in range(20) for _ in range(3)])
        claimed = store.claim("api", limit=21)
        by_key = Counter(job.concurrency_key for job in claimed)
        assert len(by_key) == 21  # every key had a turn before any key had a second
        assert set(by_key.values()) == {1}

    def test_turns_go_on_from_claim_to_claim(self, store: ClaimStore) -> None:
        store.configure_queue("api", key_concurrency_limit=100)
        _keyed(store, "api", *["a"] * 5, *["b"] * 5, *["c"] * 5, None, None)
        keys = [job.concurrency_key for _ in range(8) for job in store.claim("api", limit=1)]
        assert keys == [None, "a", "b", "c", None, "a", "b", "c"]

    def test_turns_keep_the_priority_first(self, store: ClaimStore) -> None:
        store.configure_queue("api", key_concurrency_limit=10)
        store.insert(
            [
                *(NewJob(kind="k", queue="api", concurrency_key="a", priority=1) for _ in range(3)),
                NewJob(kind="k", queue="api", concurrency_key="b", priority=3),
            ]
        )
        claimed = store.claim("api", limit=3)
        assert [job.concurrency_key for job in claimed] == ["a", "a", "a"]

    # -- rates per key ------------------------------------------------------------------------
    def test_each_key_has_its_own_bucket(self, store: ClaimStore, clock: ManualClock) -> None:
        store.configure_queue("api", key_rate_limit=(1, 2))
        _keyed(store, "api", *["a"] * 10, *["b"] * 10, *[None] * 3)
        claimed = store.claim("api", limit=20)
        assert Counter(job.concurrency_key for job in claimed) == {"a": 2, "b": 2, None: 3}
        assert store.claim("api", limit=20) == []
        clock.advance(1)
        assert Counter(job.concurrency_key for job in store.claim("api", limit=20)) == {
            "a": 1,
            "b": 1,
        }

    def test_a_keys_bucket_is_written_back_by_every_claim_that_takes_from_it(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("api", key_rate_limit=(1, 3))
        _keyed(store, "api", *["a"] * 10)
        assert len(store.claim("api", limit=2)) == 2  # 1 token left, the bucket stored
        assert len(store.claim("api", limit=1)) == 1  # the last token: the stored bucket empty
        assert store.claim("api", limit=5) == []

    def test_the_key_rate_bound_holds_over_every_window(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        per_second, burst = 4.0, 3
        store.configure_queue("api", key_rate_limit=(per_second, burst))
        _keyed(store, "api", *["a", "b"] * 150)
        starts: dict[str | None, list[float]] = {"a": [], "b": []}
        for step in range(50):
            clock.advance(0.1 + 0.1 * (step % 3))
            at = clock.now().timestamp()
            for job in store.claim("api", limit=9):
                starts[job.concurrency_key].append(at)
        for times in starts.values():
            assert len(times) > burst
            for i, first in enumerate(times):
                for j in range(i, len(times)):
                    window = times[j] - first
                    assert j - i + 1 <= burst + per_second * window + 1e-9, (i, j, window)

    def test_a_key_rate_given_again_fills_every_keys_bucket(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("api", key_rate_limit=(1, 2))
        _keyed(store, "api", *["a"] * 10)
        assert len(store.claim("api", limit=10)) == 2
        store.configure_queue("api", key_rate_limit=(1, 2))
        assert len(store.claim("api", limit=10)) == 2

    def test_a_key_that_ran_out_of_tokens_holds_back_only_itself(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("api", key_rate_limit=(1, 1), concurrency_limit=50)
        _keyed(store, "api", *["a"] * 5)
        assert len(store.claim("api", limit=5)) == 1
        _keyed(store, "api", "b", None)
        assert Counter(job.concurrency_key for job in store.claim("api", limit=5)) == {
            "b": 1,
            None: 1,
        }

    # -- ordering -----------------------------------------------------------------------------
    def test_jobs_of_one_ordering_key_run_one_at_a_time_in_insert_order(
        self, store: ClaimStore
    ) -> None:
        jobs = _ordered(store, "q", "o", "o", "o")
        order = []
        for _ in jobs:
            [claimed] = store.claim("q", limit=10)
            assert store.claim("q", limit=10) == []
            order.append(claimed.id)
            _finish(store, claimed.lease, Complete())
        assert order == _ids(jobs)

    def test_ordering_keys_do_not_hold_back_other_keys_or_jobs_without_one(
        self, store: ClaimStore
    ) -> None:
        jobs = _ordered(store, "q", "o", "o", "p", None, "o", "p", None)
        claimed = store.claim("q", limit=10)
        assert sorted(_ids(claimed)) == [jobs[0].id, jobs[2].id, jobs[3].id, jobs[6].id]

    def test_a_head_that_waits_holds_its_followers(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        head, follower = _ordered(store, "q", "o", "o")
        [claimed] = store.claim("q", limit=5)
        _finish(store, claimed.lease, Snooze(60))
        assert store.claim("q", limit=5) == []  # the snoozed head keeps its place
        clock.advance(61)
        [again] = store.claim("q", limit=5)
        assert again.id == head.id
        _finish(store, again.lease, RetryAfter(30))
        clock.advance(10)
        assert store.claim("q", limit=5) == []  # retrying, still the head
        clock.advance(21)
        [third] = store.claim("q", limit=5)
        _finish(store, third.lease, Complete())
        assert _ids(store.claim("q", limit=5)) == [follower.id]

    def test_a_head_that_ends_in_the_dead_letter_queue_lets_the_next_run(
        self, store: ClaimStore
    ) -> None:
        store.set_dlq_enabled("q", True)
        _head, follower = _ordered(store, "q", "o", "o")
        [claimed] = store.claim("q", limit=5)
        _finish(store, claimed.lease, Fail("gone", terminal=True))
        assert _ids(store.claim("q", limit=5)) == [follower.id]

    def test_a_cancelled_head_lets_the_next_run(self, store: ClaimStore) -> None:
        head, follower = _ordered(store, "q", "o", "o")
        store.cancel(head.id)
        assert _ids(store.claim("q", limit=5)) == [follower.id]

    def test_a_head_scheduled_later_holds_its_followers(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        later = clock.now() + timedelta(seconds=30)
        head, follower = store.insert(
            [
                NewJob(kind="k", queue="q", ordering_key="o", run_at=later),
                NewJob(kind="k", queue="q", ordering_key="o"),
            ]
        )
        assert store.claim("q", limit=5) == []
        clock.advance(31)
        assert _ids(store.claim("q", limit=5)) == [head.id]
        assert follower.state is JobState.AVAILABLE

    @pytest.mark.parametrize("parked", [False, True], ids=["running", "parked"])
    def test_a_restored_older_job_waits_for_the_live_one_of_its_key(
        self, store: ClaimStore, parked: bool
    ) -> None:
        store.set_dlq_enabled("q", True)
        first, second = _ordered(store, "q", "o", "o")
        [claimed] = store.claim("q", limit=5)
        _finish(store, claimed.lease, Fail("gone", terminal=True))
        [running] = store.claim("q", limit=5)
        assert running.id == second.id
        callback_id = _park(store, running) if parked else None  # waiting is live too
        store.retry_from_dlq(first.id)  # older than the live one: the key's head again
        assert store.claim("q", limit=5) == []
        if callback_id is None:
            _finish(store, running.lease, Complete())
        else:
            store.resolve_callback(callback_id, CompleteCallback(None))
        assert _ids(store.claim("q", limit=5)) == [first.id]

    def test_ordering_holds_on_a_queue_with_limits_too(self, store: ClaimStore) -> None:
        store.configure_queue("q", concurrency_limit=10, key_concurrency_limit=5)
        jobs = store.insert(
            [NewJob(kind="k", queue="q", ordering_key="o", concurrency_key="t") for _ in range(4)]
        )
        assert _ids(store.claim("q", limit=10)) == [jobs[0].id]

    def test_a_long_line_of_followers_does_not_hold_back_other_jobs(
        self, store: ClaimStore
    ) -> None:
        _ordered(store, "q", *["o"] * 50)
        free = _ordered(store, "q", None, None)
        claimed = store.claim("q", limit=3)
        assert len(claimed) == 3
        assert set(_ids(free)) <= set(_ids(claimed))
