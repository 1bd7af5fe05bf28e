"""Keyed claims on SQLite agree with the in-memory store's, job for job.

The contract tells stories one at a time; here hypothesis mixes them: jobs of several
priorities, concurrency keys and ordering keys, some scheduled later, on a queue with key
limits (or none), claimed with and without priority aging while attempts finish, retry,
snooze and fail to the dead-letter queue and the clock moves. SQLite picks its candidates in
SQL (the ordering filter, the per-key window, each aged or not: four statements) and the
memory store in Python, so after every step both must have claimed the same jobs, in the same
order, and hold the same jobs and dead letters.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awa.adapters.memory import ManualClock, MemoryStore
from awa.adapters.sqlite import MEMORY, SqliteStore
from awa.domain import Complete, Fail, Job, NewJob, RetryAfter, Snooze
from awa.domain.outcomes import Outcome
from awa.ports import BATCH_SIZE_MAX, ClaimStore, Finish
from awa.testing.agreement import SEED, HalfJitter

QUEUE = "q"
_OUTCOMES: dict[str, Outcome] = {
    "complete": Complete(),
    "retry": RetryAfter(30),
    "snooze": Snooze(60),
    "fail": Fail("gone", terminal=True),
}

_job = st.tuples(
    st.integers(1, 4),  # priority
    st.sampled_from([None, "a", "b", "c"]),  # concurrency_key
    st.sampled_from([None, None, "x", "y"]),  # ordering_key
    st.sampled_from([0, 0, 0, 45]),  # run_at, seconds from now
)
_limits = st.fixed_dictionaries(
    {
        "key_concurrency_limit": st.sampled_from([None, 1, 2, 2]),
        "key_rate_limit": st.sampled_from([None, (1.0, 2)]),
        "concurrency_limit": st.sampled_from([None, None, 4]),
    }
)
_step = st.one_of(
    st.tuples(st.just("insert"), st.lists(_job, min_size=1, max_size=6)),
    # claims and finishes are listed twice: most of what a claim decides lies behind another
    st.tuples(st.just("claim"), st.integers(1, 6), st.sampled_from([0.0, 20.0])),
    st.tuples(st.just("claim"), st.integers(1, 6), st.sampled_from([0.0, 20.0])),
    st.tuples(st.just("finish"), st.integers(0, 30), st.sampled_from(sorted(_OUTCOMES))),
    st.tuples(st.just("finish"), st.integers(0, 30), st.sampled_from(sorted(_OUTCOMES))),
    st.tuples(st.just("advance"), st.sampled_from([1, 10, 50, 100])),
    st.tuples(st.just("promote")),
)


def _run(store: ClaimStore, clock: ManualClock, held: list[Job], step: tuple[Any, ...]) -> Any:
    """One step on one store; ``held`` is the attempts claimed and not yet finished, as the
    memory store gave them (the same values SQLite must give)."""
    name, *args = step
    if name == "insert":
        now = clock.now()
        return store.insert(
            [
                NewJob(
                    kind="k",
                    queue=QUEUE,
                    priority=priority,
                    concurrency_key=key,
                    ordering_key=order,
                    run_at=now + timedelta(seconds=later) if later else None,
                )
                for priority, key, order, later in args[0]
            ]
        )
    if name == "claim":
        return store.claim(QUEUE, limit=args[0], priority_aging_s=args[1])
    if name == "finish":
        if not held:
            return None
        job = held[args[0] % len(held)]
        return store.finish([Finish(job.lease, _OUTCOMES[args[1]])])
    if name == "advance":
        clock.advance(args[0])
        return None
    return store.promote()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    limits=_limits,
    jobs=st.lists(_job, min_size=4, max_size=24),
    steps=st.lists(_step, min_size=4, max_size=30),
)
def test_memory_and_sqlite_claim_the_same_keyed_jobs_in_the_same_order(
    limits: dict[str, Any], jobs: list[tuple[Any, ...]], steps: list[tuple[Any, ...]]
) -> None:
    steps = [("insert", jobs), *steps]
    memory_clock, sqlite_clock = ManualClock(), ManualClock()
    memory = MemoryStore(memory_clock, rng=HalfJitter(SEED))
    with SqliteStore(MEMORY, clock=sqlite_clock, rng=HalfJitter(SEED)) as sqlite:
        if any(value is not None for value in limits.values()):
            assert memory.configure_queue(QUEUE, **limits) == sqlite.configure_queue(
                QUEUE, **limits
            )
        held: list[Job] = []
        for number, step in enumerate(steps):
            expected = _run(memory, memory_clock, held, step)
            actual = _run(sqlite, sqlite_clock, held, step)
            assert actual == expected, f"step {number} {step}"
            if step[0] == "claim":
                held.extend(expected)
            elif step[0] == "finish" and held:
                del held[step[1] % len(held)]
            assert sqlite.list_jobs(limit=BATCH_SIZE_MAX) == memory.list_jobs(
                limit=BATCH_SIZE_MAX
            ), f"after step {number} {step}"
            assert sqlite.list_dlq(limit=BATCH_SIZE_MAX) == memory.list_dlq(limit=BATCH_SIZE_MAX), (
                f"after step {number} {step}"
            )
