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
from awa.domain.unique import HeldBy, check_on_conflict, refuse_blocked
from awa.domain.unique_keys import check_unique_states, period_number, unique_key_at
from awa.domain.validation import DURATION_MAX_S

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


def test_the_default_unique_holds_every_state_but_failed_and_cancelled() -> None:
    default = Unique()
    assert (default.by_args, default.by_queue, default.period) == (True, False, None)
    assert default.states == frozenset(JobState) - {JobState.FAILED, JobState.CANCELLED}


def test_unique_options_are_read_into_one_canonical_form() -> None:
    live = ["available", "scheduled", "running", "waiting_external", "retryable"]
    named = Unique(by_args=["to", "cc", "to"], period=timedelta(hours=1), states=live)
    assert named.by_args == ("cc", "to")  # a set of names: order and repeats do not matter
    assert named.period == 3600
    assert named.states == frozenset(JobState(s) for s in live)
    assert Unique(by_args=False, by_queue=True, period=60.0).by_args is False
    whole = Unique(period=60.0).period
    assert (whole, type(whole)) == (60, int)
    # the bounds themselves are allowed
    assert Unique(period=1).period == 1
    assert Unique(period=DURATION_MAX_S).period == int(DURATION_MAX_S)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"by_args": "to"}, "by_args is True, False or a list of field names, got 'to'"),
        ({"by_args": b"to"}, "by_args is True, False or a list of field names"),
        ({"by_args": 1}, "by_args is True, False or a list of field names, got 1"),
        ({"by_args": []}, "by_args names at least one field, each a string, got []"),
        ({"by_args": ["to", 1]}, "by_args names at least one field, each a string"),
        ({"by_args": ["to", ""]}, "by_args names at least one field, each a string"),
        ({"by_queue": 1}, "by_queue must be True or False, got 1"),
        ({"by_queue": None}, "by_queue must be True or False, got None"),
        ({"period": 0}, "a unique period is a whole number of seconds from 1 to"),
        ({"period": -60}, "a unique period is a whole number of seconds"),
        ({"period": 1.5}, "a unique period is a whole number of seconds"),
        ({"period": timedelta(milliseconds=1500)}, "a unique period is a whole number"),
        ({"period": DURATION_MAX_S + 1}, "a unique period is a whole number of seconds"),
        ({"period": True}, "a unique period is a whole number of seconds"),
        ({"period": "60"}, "a unique period is a whole number of seconds"),
        ({"period": [60]}, "a unique period is a whole number of seconds"),
        ({"states": "available"}, "unique states come as a set of states, got 'available'"),
        ({"states": JobState.AVAILABLE}, "unique states come as a set of states"),
        ({"states": 3}, "unique states come as a set of states, got 3"),
        ({"states": []}, "unique states must name at least one state"),
        ({"states": ["available", "asleep"]}, "state"),
    ],
)
def test_a_unique_with_a_bad_option_is_refused_in_one_sentence(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        Unique(**options)  # type: ignore[arg-type]
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_new_job_takes_only_a_unique_as_its_unique() -> None:
    with pytest.raises(ValidationError, match=r"unique takes an awa\.Unique, got dict"):
        NewJob(kind="k", unique={"by_args": True})  # type: ignore[arg-type]
    assert NewJob(kind="k").unique_key_at(START) is None
    periodic = NewJob(kind="k", unique=Unique(period=60))
    assert (
        periodic.unique_key_at(START) == f"{periodic.unique_digest()}:{START.timestamp() // 60:.0f}"
    )


def test_args_are_compared_as_json_values_not_as_written() -> None:
    assert _digest(Unique(), {"a": 1, "b": [1, 2]}) == _digest(Unique(), {"b": [1, 2], "a": 1})
    assert _digest(Unique(), {"a": 1}) != _digest(Unique(), {"a": 2})
    assert _digest(Unique(by_args=("a",)), {"a": 1, "b": 2}) == _digest(
        Unique(by_args=("a",)), {"b": 3, "a": 1}
    )
    # by_args=False: the kind alone (and the queue when asked) makes the key
    assert _digest(Unique(by_args=False), {"a": 1}) == _digest(Unique(by_args=False), {"a": 2})
    assert Unique(by_queue=True).digest("k", "q1", {}) != Unique(by_queue=True).digest(
        "k", "q2", {}
    )
    assert Unique().digest("k", "q1", {}) == Unique().digest("k", "q2", {})
    assert Unique(period=60).digest("k", "q", {}) != Unique().digest("k", "q", {})


def test_keys_are_the_same_in_every_release() -> None:
    """Keys are stored with the jobs: a release that computed them differently would let a
    duplicate of a job inserted before the upgrade in. These were computed once and must not
    change (SHA-256 of the kind, queue, period and canonical JSON args, 32 hex digits)."""
    args = {"to": "ü@example.com", "n": [1, 2.5]}
    assert Unique().digest("send", "mail", args) == "476ebb1c6ff8fb773c5b56b9d596eac0"
    assert (
        Unique(by_args=("to",), by_queue=True, period=3600).digest(
            "send", "mail", {"to": "a", "cc": "b"}
        )
        == "30037bd3d4aa1050a907e99fd4472690"
    )
    assert (
        Unique(by_args=False, period=timedelta(days=1)).digest("send", "mail", {"to": "a"})
        == "c0ce2ad2870de49e0425e14ca1c7c818"
    )


def test_periods_are_counted_from_the_unix_epoch() -> None:
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    assert period_number(epoch, 60) == 0
    assert period_number(epoch + timedelta(seconds=59, microseconds=999_999), 60) == 0
    assert period_number(epoch + timedelta(minutes=2), 60) == 2
    assert period_number(epoch - timedelta(microseconds=1), 60) == -1
    assert period_number(START, 3600) == 490_896  # 2026-01-01 is hour 490,896 since 1970
    key = unique_key_at("d", 86_400, START)
    assert key == "d:20454"  # a whole number: the day 2026-01-01 is since 1970
    assert unique_key_at("d", None, START) == "d"


def test_on_conflict_is_raise_or_skip() -> None:
    assert check_on_conflict("skip") == "skip"
    assert check_on_conflict("raise") == "raise"
    with pytest.raises(ValidationError, match="on_conflict is 'raise' or 'skip', got 'ignore'"):
        check_on_conflict("ignore")
