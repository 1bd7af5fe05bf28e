"""The contract of a queue's flow limits: ``configure_queue(concurrency_limit=, rate_limit=)``.

A limited queue never has more live attempts (``running`` or ``waiting_external``) than its
``concurrency_limit``, whoever claims; its attempts start from a token bucket of
``rate_limit=(per_second, burst)``, so over any window of ``w`` seconds at most
``burst + per_second * w`` start. A slot comes back when its attempt ends (a finish, a snooze,
a retry, a rescue), never before; a limit lowered below what runs stops nothing. The time is
the store's clock, so the rate stories run on the suite's ``ManualClock``.
"""

from __future__ import annotations

import math

from awa.adapters.memory import ManualClock
from awa.domain import Complete, Fail, Job, JobState, NewJob, RetryAfter, Snooze
from awa.domain.flow import RateLimit
from awa.ports import ClaimStore, Finish, QueueSettings
from awa.testing.contract._helpers import StoreFixtures, _claim_one, _finish, _park
from awa.testing.scenarios import STALENESS_S

__all__ = ["FlowContract"]


def _fill(store: ClaimStore, queue: str, count: int) -> None:
    store.insert([NewJob(kind="k", queue=queue) for _ in range(count)])


def _by_priority(store: ClaimStore, queue: str, *priorities: int) -> list[Job]:
    return store.insert([NewJob(kind="k", queue=queue, priority=p) for p in priorities])


def _live(store: ClaimStore, queue: str) -> int:
    return sum(
        store.count_jobs(state=state, queue=queue)
        for state in (JobState.RUNNING, JobState.WAITING_EXTERNAL)
    )


class FlowContract(StoreFixtures):
    """Concurrency and rate limits per queue, held by every claim of the store."""

    # -- the settings -------------------------------------------------------------------------
    def test_flow_limits_are_stored_and_none_removes_them(self, store: ClaimStore) -> None:
        settings = store.configure_queue("api", concurrency_limit=3, rate_limit=(2.5, 5))
        assert settings == QueueSettings("api", concurrency_limit=3, rate_limit=RateLimit(2.5, 5))
        assert store.configure_queue("api", concurrency_limit=None).rate_limit == RateLimit(2.5, 5)
        assert store.configure_queue("api", rate_limit=None) == QueueSettings("api")

    def test_a_limit_not_given_stays_as_it_was(self, store: ClaimStore) -> None:
        store.configure_queue("api", concurrency_limit=4, rate_limit=RateLimit(1, 2))
        settings = store.configure_queue("api", dlq_enabled=True, finished_retention_s=60)
        assert (settings.concurrency_limit, settings.rate_limit) == (4, RateLimit(1, 2))
        store.pause_queue("api")
        store.resume_queue("api")
        assert store.configure_queue("api", rate_limit=(3, 3)).concurrency_limit == 4

    # -- concurrency --------------------------------------------------------------------------
    def test_claims_never_hold_more_live_attempts_than_the_limit(self, store: ClaimStore) -> None:
        store.configure_queue("api", concurrency_limit=3)
        _fill(store, "api", 10)
        first = store.claim("api", limit=2)
        second = store.claim("api", limit=5)
        assert (len(first), len(second)) == (2, 1)
        assert store.claim("api", limit=5) == []
        assert _live(store, "api") == 3
        _finish(store, first[0].lease, Complete())
        assert len(store.claim("api", limit=5)) == 1
        assert _live(store, "api") == 3

    def test_a_limited_queue_does_not_hold_back_another_queue(self, store: ClaimStore) -> None:
        store.configure_queue("api", concurrency_limit=1)
        _fill(store, "api", 3)
        _fill(store, "free", 3)
        assert len(store.claim("api", limit=3)) == 1
        assert len(store.claim("free", limit=3)) == 3

    def test_each_limited_queue_claims_under_its_own_limits(self, store: ClaimStore) -> None:
        store.configure_queue("wide", concurrency_limit=5)  # stored first
        store.configure_queue("api", concurrency_limit=1)
        _fill(store, "api", 3)
        _fill(store, "wide", 3)
        for _ in range(2):  # the first claims learn both are limited, the next ones lock
            claimed = [len(store.claim(queue, limit=3)) for queue in ("api", "wide")]
        assert claimed == [0, 0]
        assert _live(store, "api") == 1
        assert _live(store, "wide") == 3

    def test_a_parked_attempt_holds_its_slot_until_it_ends(self, store: ClaimStore) -> None:
        store.configure_queue("api", concurrency_limit=1)
        _fill(store, "api", 2)
        parked = _claim_one(store, "api")
        _park(store, parked)
        assert store.get_job(parked.id).state is JobState.WAITING_EXTERNAL
        assert store.claim("api", limit=1) == []
        store.cancel(parked.id)
        assert len(store.claim("api", limit=1)) == 1

    def test_a_snooze_a_retry_and_a_failure_give_their_slots_back(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("api", concurrency_limit=3)
        _fill(store, "api", 6)
        running = store.claim("api", limit=3)
        assert store.claim("api", limit=3) == []
        store.finish(
            [
                Finish(running[0].lease, Snooze(60)),
                Finish(running[1].lease, RetryAfter(60)),
                Finish(running[2].lease, Fail("gone", terminal=True)),
            ]
        )
        assert len(store.claim("api", limit=5)) == 3
        clock.advance(61)
        assert store.claim("api", limit=5) == []  # the snoozed and retried jobs wait for slots

    def test_a_lost_workers_slots_come_back_by_the_rescue_and_not_before(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("api", concurrency_limit=2)
        _fill(store, "api", 4)
        assert len(store.claim("api", limit=2)) == 2  # the worker that holds them is then lost
        clock.advance(STALENESS_S + 1)
        assert store.claim("api", limit=2) == []  # stale, but still live until rescued
        assert len(store.rescue(staleness_s=STALENESS_S)) == 2
        assert len(store.claim("api", limit=4)) == 2

    def test_a_limit_lowered_below_what_runs_stops_nothing_and_claims_nothing_more(
        self, store: ClaimStore
    ) -> None:
        _fill(store, "api", 6)
        running = store.claim("api", limit=4)
        store.configure_queue("api", concurrency_limit=2)
        assert _live(store, "api") == 4
        assert store.claim("api", limit=2) == []
        for job in running[:2]:
            _finish(store, job.lease, Complete())
        assert store.claim("api", limit=2) == []  # still two live: at the limit
        _finish(store, running[2].lease, Complete())
        assert len(store.claim("api", limit=2)) == 1

    def test_removing_the_limit_frees_the_queue(self, store: ClaimStore) -> None:
        store.configure_queue("api", concurrency_limit=1)
        _fill(store, "api", 4)
        assert len(store.claim("api", limit=4)) == 1
        store.configure_queue("api", concurrency_limit=None)
        assert len(store.claim("api", limit=4)) == 3

    def test_a_paused_limited_queue_claims_nothing(self, store: ClaimStore) -> None:
        store.configure_queue("api", concurrency_limit=5)
        _fill(store, "api", 3)
        assert len(store.claim("api", limit=1)) == 1  # the store knows it for limited now
        store.pause_queue("api")
        assert store.claim("api", limit=2) == []
        store.resume_queue("api")
        assert len(store.claim("api", limit=2)) == 2

    def test_a_limited_claim_keeps_the_claim_order(self, store: ClaimStore) -> None:
        store.configure_queue("api", concurrency_limit=2)
        _low, high, mid = _by_priority(store, "api", 4, 1, 2)
        assert [job.id for job in store.claim("api", limit=3)] == [high.id, mid.id]

    def test_a_limited_claim_ages_priorities_as_a_plain_one(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("api", concurrency_limit=5)
        [old] = store.insert([NewJob(kind="old", queue="api", priority=4)])
        clock.advance(250)  # 2 whole steps of 100 s: effective priority 2
        store.insert(
            [
                NewJob(kind="fresh", queue="api", priority=3),
                NewJob(kind="tie", queue="api", priority=2),
                NewJob(kind="later", queue="api", priority=4),
            ]
        )
        order = [j.kind for j in store.claim("api", limit=2, priority_aging_s=100)]
        assert order == ["old", "tie"]  # priority 2 by age, and older than "tie"
        assert store.get_job(old.id).priority == 4

    def test_a_limited_claim_of_fewer_than_the_queue_holds_takes_the_first_in_claim_order(
        self, store: ClaimStore
    ) -> None:
        store.configure_queue("api", concurrency_limit=5)
        _low, high, mid = _by_priority(store, "api", 4, 1, 2)
        assert [job.id for job in store.claim("api", limit=2)] == [high.id, mid.id]

    # -- rates --------------------------------------------------------------------------------
    def test_a_rate_limit_starts_a_burst_then_per_second(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("api", rate_limit=(2, 3))
        _fill(store, "api", 20)
        assert len(store.claim("api", limit=10)) == 3
        assert store.claim("api", limit=10) == []
        clock.advance(0.4)
        assert store.claim("api", limit=10) == []  # 0.8 of a token: none whole yet
        clock.advance(0.6)
        assert len(store.claim("api", limit=10)) == 2
        clock.advance(60)
        assert len(store.claim("api", limit=10)) == 3  # refilled to the burst, no more

    def test_the_rate_bound_holds_over_every_window(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        per_second, burst = 5.0, 4
        store.configure_queue("api", rate_limit=(per_second, burst))
        _fill(store, "api", 200)
        starts: list[float] = []
        for step in range(60):  # claims at uneven times, 0.1 s to 0.3 s apart
            clock.advance(0.1 + 0.1 * (step % 3))
            at = clock.now().timestamp()
            starts.extend(at for _ in store.claim("api", limit=7))
        assert len(starts) > burst
        for i, first in enumerate(starts):
            for j in range(i, len(starts)):
                window = starts[j] - first
                assert j - i + 1 <= burst + per_second * window + 1e-9, (i, j, window)
        elapsed = starts[-1] - starts[0]
        assert len(starts) >= math.floor(per_second * elapsed)  # and the rate is not starved

    def test_a_new_rate_starts_with_a_full_bucket(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("api", rate_limit=(1, 2))
        _fill(store, "api", 10)
        assert len(store.claim("api", limit=10)) == 2
        store.configure_queue("api", rate_limit=(1, 4))
        assert len(store.claim("api", limit=10)) == 4

    def test_a_token_is_taken_by_each_start_and_not_given_back(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("api", rate_limit=(1, 2))
        _fill(store, "api", 5)
        started = store.claim("api", limit=5)
        assert len(started) == 2
        for job in started:
            _finish(store, job.lease, RetryAfter(0))
        clock.advance(0.5)
        assert store.claim("api", limit=5) == []  # the retries wait for tokens of their own

    def test_rate_and_concurrency_limits_hold_together(
        self, store: ClaimStore, clock: ManualClock
    ) -> None:
        store.configure_queue("api", concurrency_limit=2, rate_limit=(10, 10))
        _fill(store, "api", 10)
        running = store.claim("api", limit=10)
        assert len(running) == 2  # the slots, not the tokens, hold this claim back
        for job in running:
            _finish(store, job.lease, Complete())
        assert len(store.claim("api", limit=10)) == 2
