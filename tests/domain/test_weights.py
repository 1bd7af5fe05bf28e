"""The slot arithmetic of weighted queues (``awa.domain.weights``): laws over every reachable
state of a process's shared slots, and the refusals of bad settings."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from awa.domain import ValidationError
from awa.domain.weights import QueueNeed, QueueWeight, SlotShares


@st.composite
def shares(draw: st.DrawFn) -> SlotShares:
    count = draw(st.integers(1, 5))
    total = draw(st.integers(1, 60))
    reserved_left = total
    queues = []
    for n in range(count):
        floor = draw(st.integers(0, min(reserved_left, 10)))
        reserved_left -= floor
        queues.append(QueueWeight(f"q{n}", min_workers=floor, weight=draw(st.integers(1, 6))))
    return SlotShares(total, queues)


@st.composite
def states(draw: st.DrawFn) -> tuple[SlotShares, list[QueueNeed]]:
    """A configuration and what each queue holds and wants, in a state the runtime can reach:
    the shared slots held fit in the shared pool."""
    config = draw(shares())
    pool_left = config.shared
    needs = []
    for queue in config.queues:
        held = draw(st.integers(0, queue.min_workers + pool_left))
        pool_left -= max(0, held - queue.min_workers)
        needs.append(QueueNeed(held=held, wanted=draw(st.integers(0, 80))))
    return config, needs


def _pooled(config: SlotShares, holding: list[int]) -> list[int]:
    return [max(0, h - q.min_workers) for q, h in zip(config.queues, holding, strict=True)]


@given(states())
def test_never_more_than_the_total_in_use_and_never_more_than_wanted(
    state: tuple[SlotShares, list[QueueNeed]],
) -> None:
    config, needs = state
    grants = config.claimable(needs)
    assert all(0 <= g <= n.wanted for g, n in zip(grants, needs, strict=True))
    assert sum(n.held for n in needs) + sum(grants) <= config.total
    holding = [n.held + g for n, g in zip(needs, grants, strict=True)]
    assert sum(_pooled(config, holding)) <= config.shared


@given(states())
def test_a_queue_with_work_gets_its_min_workers_at_once(
    state: tuple[SlotShares, list[QueueNeed]],
) -> None:
    config, needs = state
    grants = config.claimable(needs)
    for queue, need, grant in zip(config.queues, needs, grants, strict=True):
        assert need.held + grant >= min(queue.min_workers, need.held + need.wanted)


@given(states())
def test_no_slot_stays_free_while_a_queue_wants_one(
    state: tuple[SlotShares, list[QueueNeed]],
) -> None:
    """Work-conserving: a queue that gets less than it wants has filled its own reserved
    slots, and the shared pool is full. (A queue's reserved slots are never lent: that is the
    guarantee, as upstream.)"""
    config, needs = state
    grants = config.claimable(needs)
    holding = [n.held + g for n, g in zip(needs, grants, strict=True)]
    for queue, need, grant, held in zip(config.queues, needs, grants, holding, strict=True):
        if grant < need.wanted:
            assert held >= queue.min_workers
            assert sum(_pooled(config, holding)) == config.shared


@given(states())
def test_the_shared_pool_goes_to_whoever_is_furthest_below_its_share(
    state: tuple[SlotShares, list[QueueNeed]],
) -> None:
    """Shares follow weights within rounding: a queue dealt a shared slot, less one slot, holds
    less per unit of weight than any queue still wanting one would with one more
    (``(pooled_i - 1) / w_i < (pooled_j + 1) / w_j``): each is within one slot of a common
    level."""
    config, needs = state
    grants = config.claimable(needs)
    holding = [n.held + g for n, g in zip(needs, grants, strict=True)]
    before = _pooled(config, [n.held for n in needs])
    after = _pooled(config, holding)
    weights = [q.weight for q in config.queues]
    for i in range(len(needs)):
        if after[i] <= before[i]:
            continue  # dealt nothing from the pool
        for j in range(len(needs)):
            if grants[j] < needs[j].wanted:
                assert Fraction(after[i] - 1, weights[i]) < Fraction(after[j] + 1, weights[j])


@given(shares(), st.data())
def test_from_idle_every_busy_queue_gets_its_weighted_share(
    config: SlotShares, data: st.DataObject
) -> None:
    """From a process running nothing, with every queue wanting more than the pool, each gets
    its min_workers plus ``shared * weight / sum(weights)`` within one slot."""
    wanted = config.total + 1
    grants = config.claimable([QueueNeed(0, wanted) for _ in config.queues])
    weight_sum = sum(q.weight for q in config.queues)
    assert sum(grants) == config.total
    for queue, grant in zip(config.queues, grants, strict=True):
        exact = Fraction(config.shared * queue.weight, weight_sum)
        assert abs(grant - queue.min_workers - exact) < 1


def test_an_idle_queues_share_goes_to_the_busy_one() -> None:
    config = SlotShares(20, [QueueWeight("a", min_workers=5), QueueWeight("b", min_workers=5)])
    assert config.claimable([QueueNeed(0, 100), QueueNeed(0, 0)]) == (15, 0)
    # b's work arrives while a holds the whole pool: b's own slots at once, the pool as a's
    # handlers finish, until both hold their share
    assert config.claimable([QueueNeed(15, 100), QueueNeed(0, 100)]) == (0, 5)
    assert config.claimable([QueueNeed(12, 100), QueueNeed(5, 100)]) == (0, 3)
    assert config.claimable([QueueNeed(9, 100), QueueNeed(8, 100)]) == (1, 2)


def test_weights_three_to_one() -> None:
    config = SlotShares(24, [QueueWeight("a", 2, weight=3), QueueWeight("b", 2, weight=1)])
    assert config.claimable([QueueNeed(0, 100), QueueNeed(0, 100)]) == (2 + 15, 2 + 5)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: SlotShares(0, []), "global_max_workers must be an integer from 1 to 10000, got 0"),
        (lambda: SlotShares(True, []), "global_max_workers must be an integer"),
        (lambda: QueueWeight("a", weight=0), "weight must be an integer from 1 to 10000, got 0"),
        (lambda: QueueWeight("a", weight=1.5), "weight must be an integer from 1 to 10000"),
        (lambda: QueueWeight("a", min_workers=-1), "min_workers must be an integer from 0"),
        (
            lambda: SlotShares(20, [QueueWeight("a", 15), QueueWeight("b", 10)]),
            "the queues' min_workers add up to 25, more than global_max_workers 20",
        ),
    ],
)
def test_bad_settings_are_refused_in_one_line(make: object, message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)) as refused:
        make()  # type: ignore[operator]
    assert "\n" not in str(refused.value)
