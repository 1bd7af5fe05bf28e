"""Unique keys in the pure domain (``awa.domain.unique``); the stores' unique contract checks
the same on every store."""

import re
from datetime import datetime, timedelta, timezone

import attrs
import pytest

from awa.domain import (
    JobState,
    NewJob,
    Unique,
    UniqueConflict,
    ValidationError,
    decisions,
    holds_unique_key,
    retakes_unique_key,
)
from awa.domain.unique import HeldBy, check_unique_states, refuse_blocked, unique_key_at

START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _digest(unique: Unique, args: dict[str, object] | None = None) -> str:
    return unique.digest("k", "q", {"a": 1} if args is None else args)


def test_what_a_key_covers_tells_keys_apart() -> None:
    assert _digest(Unique()) != _digest(Unique(by_args=("a",)))  # all args, or named ones
    assert _digest(Unique(period=60)) != _digest(Unique(period=120))
    # a named field the args lack is simply not covered
    assert _digest(Unique(by_args=("a", "b"))) == _digest(Unique(by_args=("a",)))


def test_a_period_key_stays_the_same_all_through_its_period() -> None:
    last = START + timedelta(seconds=59, microseconds=999_999)
    assert unique_key_at("d", 60, START) == unique_key_at("d", 60, last)
    assert unique_key_at("d", 60, START) != unique_key_at("d", 60, START + timedelta(seconds=60))


def test_only_a_move_into_a_key_holding_state_from_outside_retakes_the_key() -> None:
    held = decisions.create_job(NewJob(kind="k", unique=Unique()), job_id=1, now=START)
    done = attrs.evolve(held, state=JobState.FAILED)  # failed is not a default unique state
    assert holds_unique_key(held)
    assert not holds_unique_key(done)
    assert retakes_unique_key(None, held)
    assert retakes_unique_key(done, held)
    assert not retakes_unique_key(held, held)
    assert not retakes_unique_key(None, done)
    assert not retakes_unique_key(done, done)


def test_an_insert_refused_for_several_holders_names_the_first_blocked_job() -> None:
    first, second = (
        decisions.create_job(NewJob(kind="k", unique=Unique()), job_id=n, now=START) for n in (7, 8)
    )
    with pytest.raises(UniqueConflict) as refused:
        refuse_blocked({3: HeldBy(second), 1: HeldBy(first)}, "raise")
    assert refused.value.job_id == first.id
    refuse_blocked({1: HeldBy(first)}, "skip")  # skipping refuses nothing


@pytest.mark.parametrize("states", [{"running"}, {"completed"}, {"waiting_external"}])
def test_unsafe_unique_states_are_refused_with_the_states_that_make_them_safe(
    states: set[str],
) -> None:
    with pytest.raises(ValidationError) as refused:
        check_unique_states(states)
    [named] = re.findall(r"; add ([a-z_, ]+) \(any of", str(refused.value))
    suggested = set(named.split(", "))
    assert suggested
    assert not suggested & states
    assert check_unique_states(states | suggested) == {JobState(s) for s in states | suggested}
