"""The claim decision under flow limits (``awa.domain.flow_claims``): examples of each rule,
then the laws over random states: no limit ever exceeded, nothing held back that no limit
holds, keys take turns, the rate bound across claims, per-key order kept."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from awa.domain import ValidationError
from awa.domain.flow import (
    HOLD_REASONS,
    Bucket,
    Candidate,
    ClaimDecision,
    FlowLimits,
    FlowState,
    RateLimit,
    decide_claims,
    full_bucket,
    tokens_available,
)

NOW = datetime(2030, 1, 1, tzinfo=timezone.utc)
NONE_HELD: dict[str, int] = dict.fromkeys(HOLD_REASONS, 0)


def held(**counts: int) -> dict[str, int]:
    return {**NONE_HELD, **counts}


def jobs(queue: str, key: str | None, ids: range) -> list[Candidate]:
    return [Candidate(i, queue, concurrency_key=key) for i in ids]


# -- examples ----------------------------------------------------------------------------


def test_with_no_limits_the_batch_is_the_first_candidates_in_claim_order() -> None:
    candidates = jobs("q", "a", range(1, 6)) + jobs("q", "b", range(6, 9))
    decision = decide_claims(candidates, FlowState(), 4, NOW)
    assert decision.granted == (1, 2, 3, 4)
    assert (decision.queue_buckets, decision.key_buckets) == ({}, {})
    assert decision.held_back == NONE_HELD


def test_a_queue_limit_grants_only_the_free_slots_and_counts_the_rest_held() -> None:
    state = FlowState(limits={"q": FlowLimits(concurrency_limit=4)}, live_by_queue={"q": 3})
    decision = decide_claims(jobs("q", None, range(1, 6)), state, 10, NOW)
    assert decision.granted == (1,)
    assert decision.held_back == held(concurrency=4)


def test_a_limit_lowered_below_what_runs_grants_nothing_and_stops_nothing() -> None:
    state = FlowState(limits={"q": FlowLimits(concurrency_limit=2)}, live_by_queue={"q": 5})
    decision = decide_claims(jobs("q", None, range(1, 4)), state, 10, NOW)
    assert decision.granted == ()
    assert decision.held_back == held(concurrency=3)


def test_a_key_at_its_limit_is_passed_over_and_other_keys_still_start() -> None:
    state = FlowState(
        limits={"q": FlowLimits(key_concurrency_limit=1)}, live_by_key={("q", "a"): 1}
    )
    candidates = jobs("q", "a", range(1, 4)) + jobs("q", "b", range(4, 6))
    decision = decide_claims(candidates, state, 10, NOW)
    assert decision.granted == (4,)
    assert decision.held_back == held(key_concurrency=4)


def test_a_key_means_nothing_in_a_queue_without_key_limits() -> None:
    state = FlowState(limits={"q": FlowLimits(concurrency_limit=10)})
    candidates = jobs("q", "a", range(1, 4)) + jobs("q", "b", range(4, 6))
    assert decide_claims(candidates, state, 3, NOW).granted == (1, 2, 3)


def test_one_key_with_ten_thousand_jobs_does_not_hold_back_a_hundred_small_keys() -> None:
    candidates = jobs("q", "big", range(10_000))
    for k in range(100):
        candidates += jobs("q", f"small-{k}", range(10_000 + 10 * k, 10_010 + 10 * k))
    state = FlowState(limits={"q": FlowLimits(key_concurrency_limit=1_000)})
    by_id = {c.id: c.concurrency_key for c in candidates}
    decision = decide_claims(candidates, state, 101, NOW)
    assert len({by_id[i] for i in decision.granted}) == 101
    assert set(decision.granted) == {0, *range(10_000, 11_000, 10)}  # each key's oldest
    assert decision.turn_cursors == {"q": "small-99"}  # the last key, in the keys' text order


def test_turns_start_after_the_key_the_last_claim_ended_on_and_wrap_around() -> None:
    candidates = jobs("q", "c", range(1, 3)) + jobs("q", "a", range(3, 5))
    candidates += jobs("q", None, range(5, 7)) + jobs("q", "b", range(7, 9))
    limits = {"q": FlowLimits(key_concurrency_limit=5)}
    first = decide_claims(candidates, FlowState(limits=limits), 3, NOW)
    assert first.granted == (5, 3, 7)  # the jobs without a key first, then a, b
    assert first.turn_cursors == {"q": "b"}
    state = FlowState(limits=limits, turn_cursors={"q": "b"})
    assert decide_claims(candidates, state, 5, NOW).granted == (1, 5, 3, 7, 2)
    state = FlowState(limits=limits, turn_cursors={"q": "zzz"})
    assert decide_claims(candidates, state, 2, NOW).granted == (5, 3)


def test_claims_of_one_job_each_still_visit_every_key_in_turn() -> None:
    candidates = jobs("q", "big", range(1_000)) + jobs("q", "small", range(1_000, 1_003))
    limits = {"q": FlowLimits(key_concurrency_limit=1_000)}
    cursors: dict[str, str | None] = {}
    keys = []
    for _ in range(4):
        decision = decide_claims(candidates, FlowState(limits=limits, turn_cursors=cursors), 1, NOW)
        cursors = {**cursors, **decision.turn_cursors}
        keys.append(cursors["q"])
        candidates = [c for c in candidates if c.id not in decision.granted]
    assert keys == ["big", "small", "big", "small"]


def test_a_queue_without_key_limits_keeps_no_turn_cursor() -> None:
    decision = decide_claims(jobs("q", "a", range(3)), FlowState(), 2, NOW)
    assert decision.turn_cursors == {}


def test_keys_take_turns_within_a_priority_and_priority_still_comes_first() -> None:
    candidates = [
        Candidate(1, "q", "a", priority=1),
        Candidate(2, "q", "a", priority=1),
        Candidate(3, "q", "b", priority=1),
        Candidate(4, "q", "b", priority=2),
        Candidate(5, "q", "c", priority=2),
    ]
    state = FlowState(limits={"q": FlowLimits(key_concurrency_limit=5)})
    assert decide_claims(candidates, state, 5, NOW).granted == (1, 3, 2, 4, 5)


def test_jobs_without_a_key_take_their_turn_as_one_more_key() -> None:
    candidates = jobs("q", None, range(1, 4)) + jobs("q", "a", range(4, 7))
    state = FlowState(limits={"q": FlowLimits(key_concurrency_limit=5)})
    assert decide_claims(candidates, state, 4, NOW).granted == (1, 4, 2, 5)


def test_only_the_head_of_an_ordering_key_starts_and_only_while_none_of_it_runs() -> None:
    candidates = [
        Candidate(1, "q", ordering_key="acct-7"),
        Candidate(2, "q", ordering_key="acct-7"),
        Candidate(3, "q", ordering_key="acct-8"),  # its head, job 0, waits for a later run_at
        Candidate(4, "q", ordering_key="acct-9"),  # another job of acct-9 is running
        Candidate(5, "q"),
    ]
    state = FlowState(
        ordering_heads={("q", "acct-7"): 1, ("q", "acct-8"): 0, ("q", "acct-9"): 4},
        ordering_live=frozenset({("q", "acct-9")}),
    )
    decision = decide_claims(candidates, state, 10, NOW)
    assert decision.granted == (1, 5)
    assert decision.held_back == held(ordering=3)


def test_an_ordering_key_in_one_queue_does_not_hold_the_same_key_in_another() -> None:
    candidates = [Candidate(1, "a", ordering_key="k"), Candidate(2, "b", ordering_key="k")]
    state = FlowState(
        ordering_heads={("a", "k"): 1, ("b", "k"): 2}, ordering_live=frozenset({("b", "x")})
    )
    assert decide_claims(candidates, state, 10, NOW).granted == (1, 2)


def test_a_store_that_names_no_head_for_an_ordering_key_is_a_bug_not_a_hold() -> None:
    with pytest.raises(ValueError, match="no ordering head"):
        decide_claims([Candidate(1, "q", ordering_key="k")], FlowState(), 1, NOW)


def test_a_queue_rate_takes_whole_tokens_and_hands_back_the_bucket_after_them() -> None:
    limit = RateLimit(1, 3)
    state = FlowState(
        limits={"q": FlowLimits(rate_limit=limit)},
        queue_buckets={"q": Bucket(0.5, NOW - timedelta(seconds=2))},
    )
    decision = decide_claims(jobs("q", None, range(1, 6)), state, 10, NOW)
    assert decision.granted == (1, 2)
    assert decision.queue_buckets == {"q": Bucket(0.5, NOW)}
    assert decision.held_back == held(rate=3)


def test_a_queue_never_drawn_on_starts_with_a_full_bucket() -> None:
    state = FlowState(limits={"q": FlowLimits(rate_limit=(1, 3))})
    decision = decide_claims(jobs("q", None, range(1, 6)), state, 10, NOW)
    assert decision.granted == (1, 2, 3)
    assert decision.queue_buckets == {"q": Bucket(0.0, NOW)}


def test_a_key_rate_is_each_keys_own_and_leaves_untouched_buckets_out() -> None:
    state = FlowState(
        limits={"q": FlowLimits(key_rate_limit=(1, 1))},
        key_buckets={("q", "a"): Bucket(0.0, NOW)},
    )
    candidates = jobs("q", "a", range(1, 3)) + jobs("q", "b", range(3, 5))
    decision = decide_claims(candidates, state, 10, NOW)
    assert decision.granted == (3,)
    assert decision.key_buckets == {("q", "b"): Bucket(0.0, NOW)}
    assert decision.held_back == held(key_rate=3)


def test_a_candidate_held_by_several_limits_is_counted_once_under_the_first() -> None:
    state = FlowState(
        limits={"q": FlowLimits(concurrency_limit=1, key_concurrency_limit=1, rate_limit=(1, 1))},
        live_by_queue={"q": 1},
        live_by_key={("q", "a"): 1},
        queue_buckets={"q": Bucket(0.0, NOW)},
    )
    decision = decide_claims(jobs("q", "a", range(1, 4)), state, 10, NOW)
    assert decision.held_back == held(concurrency=3)


def test_candidates_left_once_the_batch_is_full_are_not_counted_as_held() -> None:
    decision = decide_claims(jobs("q", None, range(1, 6)), FlowState(), 2, NOW)
    assert decision.held_back == NONE_HELD
    assert decide_claims(jobs("q", None, range(1, 6)), FlowState(), 0, NOW).granted == ()


def test_a_bad_batch_size_or_a_job_given_twice_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"^batch_size must be an integer >= 0, got -1$"):
        decide_claims([], FlowState(), -1, NOW)
    with pytest.raises(ValueError, match="the same job twice"):
        decide_claims([Candidate(1, "q"), Candidate(1, "q")], FlowState(), 2, NOW)


# -- laws over random states -------------------------------------------------------------

QUEUES = ("a", "b")
KEYS = ("k1", "k2", "k3")
ORDER_KEYS = ("o1", "o2")
small_rates = st.builds(RateLimit, st.sampled_from([0.5, 1, 3]), st.integers(1, 4))
flow_limits = st.builds(
    FlowLimits,
    concurrency_limit=st.none() | st.integers(1, 6),
    key_concurrency_limit=st.none() | st.integers(1, 3),
    rate_limit=st.none() | small_rates,
    key_rate_limit=st.none() | small_rates,
)


@st.composite
def claims(draw: st.DrawFn) -> tuple[list[Candidate], FlowState, int]:
    """Candidates in claim order and a state a store could read: counts may already be over
    a limit (lowered since), heads may be jobs outside the candidates (waiting for run_at)."""
    shapes = draw(
        st.lists(
            st.tuples(
                st.sampled_from(QUEUES),
                st.none() | st.sampled_from(KEYS),
                st.none() | st.sampled_from(ORDER_KEYS),
                st.integers(1, 3),
            ),
            max_size=30,
        )
    )
    candidates = sorted(
        (Candidate(i + 1, *shape) for i, shape in enumerate(shapes)),
        key=lambda c: (c.priority, c.id),
    )
    limits = {q: draw(flow_limits) for q in QUEUES}
    ordering = {(c.queue, c.ordering_key) for c in candidates if c.ordering_key is not None}
    oldest = {
        key: min(c.id for c in candidates if (c.queue, c.ordering_key) == key) for key in ordering
    }
    heads = {key: draw(st.sampled_from([0, oldest[key]])) for key in sorted(ordering)}
    state = FlowState(
        limits=limits,
        live_by_queue={q: draw(st.integers(0, 7)) for q in QUEUES},
        live_by_key={(q, k): draw(st.integers(0, 4)) for q in QUEUES for k in KEYS},
        ordering_live=frozenset(k for k in sorted(ordering) if draw(st.booleans())),
        ordering_heads=heads,
        queue_buckets={
            q: _drawn_bucket(draw, limits[q].rate_limit) for q in QUEUES if limits[q].rate_limit
        },
        key_buckets={
            (q, k): _drawn_bucket(draw, limits[q].key_rate_limit)
            for q in QUEUES
            for k in KEYS
            if limits[q].key_rate_limit and draw(st.booleans())
        },
    )
    return candidates, state, draw(st.integers(0, 12))


def _drawn_bucket(draw: st.DrawFn, limit: RateLimit | None) -> Bucket:
    assert limit is not None
    tokens = draw(st.floats(0, limit.burst, allow_nan=False))
    return Bucket(tokens, NOW - timedelta(milliseconds=draw(st.integers(0, 3_000))))


def _granted(candidates: Sequence[Candidate], decision: ClaimDecision) -> list[Candidate]:
    by_id = {c.id: c for c in candidates}
    return [by_id[i] for i in decision.granted]


@given(claims())
def test_no_queue_or_key_ever_has_more_live_than_its_limit_after_a_claim(
    claim: tuple[list[Candidate], FlowState, int],
) -> None:
    candidates, state, batch_size = claim
    decision = decide_claims(candidates, state, batch_size, NOW)
    granted = _granted(candidates, decision)
    assert len(granted) == len(set(decision.granted)) <= batch_size
    by_queue = Counter(c.queue for c in granted)
    by_key = Counter(
        (c.queue, c.concurrency_key)
        for c in granted
        if c.concurrency_key is not None and state.limits[c.queue].has_key_limits
    )
    for queue, limits in state.limits.items():
        if limits.concurrency_limit is not None and by_queue[queue]:
            assert state.live_by_queue[queue] + by_queue[queue] <= limits.concurrency_limit
    for (queue, key), count in by_key.items():
        limit = state.limits[queue].key_concurrency_limit
        if limit is not None:
            assert state.live_by_key[(queue, key)] + count <= limit
    ordered = Counter((c.queue, c.ordering_key) for c in granted if c.ordering_key is not None)
    for order, count in ordered.items():
        assert count == 1
        assert order not in state.ordering_live
        assert state.ordering_heads[order] in decision.granted


@given(claims())
def test_every_start_takes_a_token_from_each_bucket_it_needs(
    claim: tuple[list[Candidate], FlowState, int],
) -> None:
    candidates, state, batch_size = claim
    decision = decide_claims(candidates, state, batch_size, NOW)
    granted = _granted(candidates, decision)
    for queue, limits in state.limits.items():
        count = sum(1 for c in granted if c.queue == queue)
        if limits.rate_limit is None or not count:
            assert queue not in decision.queue_buckets
            continue
        before = state.queue_buckets[queue]
        after = decision.queue_buckets[queue]
        assert tokens_available(before, limits.rate_limit, NOW) - count == math.floor(after.tokens)
        assert after.updated_at == NOW
    keyed = Counter(
        (c.queue, c.concurrency_key)
        for c in granted
        if c.concurrency_key is not None and state.limits[c.queue].key_rate_limit is not None
    )
    assert set(decision.key_buckets) == set(keyed)
    for (queue, key), after in decision.key_buckets.items():
        limit = state.limits[queue].key_rate_limit
        assert limit is not None
        count = sum(1 for c in granted if (c.queue, c.concurrency_key) == (queue, key))
        before = state.key_buckets.get((queue, key)) or full_bucket(limit, NOW)
        assert count >= 1
        assert tokens_available(before, limit, NOW) - count == math.floor(after.tokens)


def _holder(
    c: Candidate, state: FlowState, decision: ClaimDecision, granted: list[Candidate]
) -> str | None:
    """An oracle, written apart from the decision: which limit, as it stands after the
    claim, holds ``c`` back, if any."""
    limits = state.limits[c.queue]
    in_queue = sum(1 for g in granted if g.queue == c.queue)
    cap = limits.concurrency_limit
    if cap is not None and state.live_by_queue[c.queue] + in_queue >= cap:
        return "concurrency"
    if c.concurrency_key is not None and limits.has_key_limits:
        key = (c.queue, c.concurrency_key)
        in_key = sum(1 for g in granted if (g.queue, g.concurrency_key) == key)
        cap = limits.key_concurrency_limit
        if cap is not None and state.live_by_key[key] + in_key >= cap:
            return "key_concurrency"
        rate = limits.key_rate_limit
        if rate is not None:
            bucket = decision.key_buckets.get(key) or state.key_buckets.get(key)
            if tokens_available(bucket or full_bucket(rate, NOW), rate, NOW) < 1:
                return "key_rate"
    if c.ordering_key is not None:
        order = (c.queue, c.ordering_key)
        if order in state.ordering_live or state.ordering_heads[order] != c.id:
            return "ordering"
        if any((g.queue, g.ordering_key) == order for g in granted):
            return "ordering"
    rate = limits.rate_limit
    if rate is not None:
        bucket = decision.queue_buckets.get(c.queue) or state.queue_buckets[c.queue]
        if tokens_available(bucket, rate, NOW) < 1:
            return "rate"
    return None


@given(claims())
def test_a_claim_short_of_its_batch_held_back_only_what_a_limit_holds(
    claim: tuple[list[Candidate], FlowState, int],
) -> None:
    candidates, state, batch_size = claim
    decision = decide_claims(candidates, state, batch_size, NOW)
    granted = _granted(candidates, decision)
    left = [c for c in candidates if c.id not in decision.granted]
    if len(granted) < batch_size:
        for c in left:
            assert _holder(c, state, decision, granted) is not None, c
        assert sum(decision.held_back.values()) == len(left)
    else:
        assert sum(decision.held_back.values()) <= len(left)


@given(st.lists(st.sampled_from((*KEYS, None)), max_size=40), st.integers(0, 50))
def test_with_no_limit_nothing_is_held_and_the_batch_is_claim_order(
    keys: list[str | None], batch_size: int
) -> None:
    candidates = [Candidate(i, "q", key) for i, key in enumerate(keys)]
    for limits in ({}, {"q": FlowLimits()}, {"q": FlowLimits(concurrency_limit=1_000)}):
        decision = decide_claims(candidates, FlowState(limits=limits), batch_size, NOW)
        assert decision.granted == tuple(c.id for c in candidates[:batch_size])
        assert decision.held_back == NONE_HELD


@given(st.lists(st.integers(1, 30), min_size=1, max_size=12), st.integers(1, 200))
def test_keys_take_turns_so_no_key_is_ever_two_starts_ahead_of_one_still_waiting(
    sizes: list[int], batch_size: int
) -> None:
    candidates: list[Candidate] = []
    for k, size in enumerate(sizes):
        candidates += jobs("q", f"k{k}", range(len(candidates), len(candidates) + size))
    candidates.sort(key=lambda c: (c.id * 7919) % 1009)  # keys interleaved any which way
    state = FlowState(limits={"q": FlowLimits(key_concurrency_limit=1_000)})
    key_of = {c.id: c.concurrency_key for c in candidates}
    decision = decide_claims(candidates, state, batch_size, NOW)
    assert len(decision.granted) == min(batch_size, len(candidates))
    started: Counter[str | None] = Counter()
    for job_id in decision.granted:
        started[key_of[job_id]] += 1
        waiting = [f"k{k}" for k, size in enumerate(sizes) if started[f"k{k}"] < size]
        assert all(started[key_of[job_id]] <= started[k] + 1 for k in waiting)


@given(st.integers(1, 8), st.lists(st.integers(1, 5), min_size=1, max_size=30))
def test_across_claims_no_key_is_ever_two_starts_ahead_of_another(
    key_count: int, batch_sizes: list[int]
) -> None:
    """Claims of any sizes, one after another, the cursor carried: with every key always
    holding work, the keys' starts never differ by more than one."""
    keys = [f"k{k}" for k in range(key_count)]
    candidates = [Candidate(i, "q", keys[i % key_count]) for i in range(200)]
    candidates.sort(key=lambda c: (c.id * 7919) % 1009)  # keys interleaved any which way
    limits = {"q": FlowLimits(key_concurrency_limit=1_000)}
    cursors: dict[str, str | None] = {}
    started: Counter[str | None] = Counter()
    key_of = {c.id: c.concurrency_key for c in candidates}
    for batch_size in batch_sizes:
        state = FlowState(limits=limits, turn_cursors=cursors)
        decision = decide_claims(candidates, state, batch_size, NOW)
        cursors = {**cursors, **decision.turn_cursors}
        started.update(key_of[i] for i in decision.granted)
        candidates = [c for c in candidates if c.id not in decision.granted]
        assert max(started[k] for k in keys) - min(started[k] for k in keys) <= 1


@given(
    small_rates,
    small_rates,
    st.lists(st.tuples(st.integers(0, 1_500_000), st.integers(1, 12)), min_size=1, max_size=30),
)
def test_the_rate_bound_holds_over_every_window_of_successive_claims(
    rate: RateLimit, key_rate: RateLimit, claims_at: list[tuple[int, int]]
) -> None:
    limits = {"q": FlowLimits(rate_limit=rate, key_rate_limit=key_rate)}
    candidates = (
        jobs("q", "x", range(0, 50))
        + jobs("q", "y", range(50, 100))
        + jobs("q", None, range(100, 150))
    )
    queue_buckets: dict[str, Bucket] = {}
    key_buckets: dict[tuple[str, str], Bucket] = {}
    now_us, starts = 0, []
    for delta_us, batch_size in claims_at:
        now_us += delta_us
        state = FlowState(limits=limits, queue_buckets=queue_buckets, key_buckets=key_buckets)
        decision = decide_claims(
            candidates, state, batch_size, NOW + timedelta(microseconds=now_us)
        )
        queue_buckets = {**queue_buckets, **decision.queue_buckets}
        key_buckets = {**key_buckets, **decision.key_buckets}
        keys = Counter(c.concurrency_key for c in _granted(candidates, decision))
        starts.append((now_us, len(decision.granted), keys["x"], keys["y"]))
    for i, (a_us, *_) in enumerate(starts):
        total = Counter[int]()
        for b_us, *counts in starts[i:]:
            total.update(dict(enumerate(counts)))
            w = Fraction(b_us - a_us, 1_000_000)
            assert total[0] <= rate.burst + Fraction(repr(rate.per_second)) * w
            key_bound = key_rate.burst + Fraction(repr(key_rate.per_second)) * w
            assert total[1] <= key_bound
            assert total[2] <= key_bound


@given(
    st.lists(st.sampled_from(ORDER_KEYS), min_size=1, max_size=25),
    st.lists(
        st.tuples(st.integers(1, 4), st.sampled_from(["complete", "retry", "stay"])), max_size=40
    ),
)
def test_jobs_of_one_ordering_key_start_one_at_a_time_in_insert_order(
    order_keys: list[str], steps: list[tuple[int, str]]
) -> None:
    """A small run: claims of random sizes, each live attempt then completing, retrying (the
    job waits again, still unfinished) or staying live. A job starts only once every earlier
    job of its key has finished, and never beside another of its key."""
    key_of = dict(enumerate(order_keys))
    unfinished, live = set(key_of), set[int]()
    for batch_size, fate in steps:
        # priorities put claim order out of id order: the rule must not lean on it
        waiting = sorted(unfinished - live, key=lambda i: (-i % 3, i))
        heads: dict[tuple[str, str], int] = {}
        for i in sorted(unfinished, reverse=True):
            heads[("q", key_of[i])] = i
        state = FlowState(
            ordering_live=frozenset(("q", key_of[i]) for i in live), ordering_heads=heads
        )
        candidates = [Candidate(i, "q", ordering_key=key_of[i]) for i in waiting]
        for started in decide_claims(candidates, state, batch_size, NOW).granted:
            same_key = {i for i in unfinished if key_of[i] == key_of[started]}
            assert min(same_key) == started
            assert not same_key & live
            live.add(started)
        for job_id in sorted(live):
            if fate == "complete":
                unfinished.discard(job_id)
                live.discard(job_id)
            elif fate == "retry":
                live.discard(job_id)
