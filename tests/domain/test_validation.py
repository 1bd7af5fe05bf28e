"""Bad input is refused with one clear sentence, before any store is touched."""

import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone, tzinfo
from types import MappingProxyType
from typing import Any

import pytest

from awa.domain import (
    Cancel,
    CompleteCallback,
    Fail,
    FailCallback,
    Job,
    JobState,
    NewJob,
    ResumeCallback,
    RetryAfter,
    Snooze,
    ValidationError,
)
from awa.domain.validation import (
    ARGS_BYTES_MAX_DEFAULT,
    DURATION_MAX_S,
    INSTANT_MAX,
    INSTANT_MIN,
    JSON_INTEGER_DIGITS_MAX,
    TEXT_LENGTH_MAX,
    check_args_size,
    check_flag,
    check_id,
    check_json_object,
    check_state,
    shown,
    storable_text,
)

CASES = [
    ({"queue": "Has Spaces"}, "invalid queue name 'Has Spaces'"),
    ({"queue": ""}, "invalid queue name ''"),
    ({"queue": "x" * 129}, "invalid queue name"),
    ({"kind": "9lives"}, "invalid job kind '9lives'"),
    ({"priority": 0}, "priority must be an integer from 1 to 4, got 0"),
    ({"priority": 5}, "priority must be an integer from 1 to 4, got 5"),
    ({"priority": True}, "priority must be an integer from 1 to 4, got True"),
    ({"max_attempts": 0}, "max_attempts must be an integer from 1 to 1000, got 0"),
    ({"max_attempts": 1001}, "max_attempts must be an integer from 1 to 1000, got 1001"),
    ({"run_at": datetime(2030, 1, 1)}, "run_at must be a timezone-aware datetime"),
    ({"tags": "urgent"}, "tags must be a list of strings"),
    ({"tags": [""]}, "each tag must be a string of 1-100 characters"),
    ({"tags": ["x"] * 33}, "at most 32 tags"),
    ({"args": {"a": "nul\x00byte"}}, "args.a contains a NUL character"),
    ({"args": {"a": "lone \ud800"}}, "args.a contains an unpaired surrogate"),
    ({"args": {"k\x00": 1}}, "args key contains a NUL character"),
    ({"tags": ["a\x00"]}, "tag contains a NUL character"),
    ({"args": {"a": float("nan")}}, "args.a holds nan, which JSON cannot represent"),
    ({"args": {"a": object()}}, "args.a holds a object, which is not JSON"),
    ({"args": {1: "x"}}, "args has a non-string key 1"),
    ({"args": [1, 2]}, "args must be a JSON object, got list"),
    ({"metadata": {"k": {"deep": b"bytes"}}}, "metadata.k.deep holds a bytes"),
]


@pytest.mark.parametrize(("fields", "message"), CASES, ids=[m for _, m in CASES])
def test_bad_new_job_is_refused_with_a_clear_message(
    fields: dict[str, object], message: str
) -> None:
    values: dict[str, object] = {"kind": "send_email", **fields}
    with pytest.raises(ValidationError) as caught:
        NewJob(**values)  # type: ignore[arg-type]
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_deeply_nested_args_are_refused() -> None:
    args: dict[str, object] = {}
    node = args
    for _ in range(70):
        node["n"] = {}
        node = node["n"]  # type: ignore[assignment]
    with pytest.raises(ValidationError, match="nested deeper than 64 levels"):
        NewJob(kind="k", args=args)


def test_a_deep_path_is_named_by_its_start_and_end() -> None:
    args: dict[str, object] = {}
    node = args
    for level in range(70):
        node[f"key_{level}_" + "x" * 40] = {}
        node = node[f"key_{level}_" + "x" * 40]  # type: ignore[assignment]
    with pytest.raises(ValidationError) as refused:
        NewJob(kind="k", args=args)
    said = str(refused.value)
    assert said.startswith("args.key_0_xxx")
    assert "..." in said
    assert said.endswith("xxx is nested deeper than 64 levels")
    assert len(said) < 250  # 65 keys of 47 characters each: not one 3,000-character line


def test_valid_job_keeps_its_values() -> None:
    job = NewJob(kind="send_email", args={"to": "a@b.c"}, queue="email", priority=1, tags=["x"])
    assert (job.queue, job.priority, job.max_attempts, job.tags) == ("email", 1, 25, ("x",))


@pytest.mark.parametrize("outcome", [RetryAfter, Snooze])
def test_negative_or_infinite_delays_are_refused(outcome: type) -> None:
    for bad in (-1, float("inf"), "5"):
        with pytest.raises(ValidationError):
            outcome(bad)


# -- outcomes and resolutions refuse what no store can hold ---------------------------------

OUTCOME_CASES = [
    (lambda: Snooze(1e12), "Snooze seconds must be >= 0 and at most 3155760000 seconds"),
    (lambda: RetryAfter(1e12), "RetryAfter seconds must be >= 0 and at most"),
    (lambda: Cancel("stop\x00now"), "Cancel reason contains a NUL character"),
    (lambda: Cancel("   "), "Cancel reason must be a non-empty string"),
    (lambda: Fail("x" * 10_001), "error is 10001 characters; at most 10000"),
    (lambda: FailCallback(""), "callback error must be a non-empty string"),
    (lambda: FailCallback("bad\x00"), "callback error contains a NUL character"),
    (lambda: CompleteCallback({"a": "\x00"}), "callback payload.a contains a NUL character"),
    (lambda: ResumeCallback(["\ud800"]), "callback payload[0] contains an unpaired surrogate"),
    (lambda: CompleteCallback(_nested(5000)), "nested deeper than 64 levels"),
]


def _nested(depth: int) -> object:
    node: object = "leaf"
    for _ in range(depth):
        node = [node]
    return node


@pytest.mark.parametrize(("make", "message"), OUTCOME_CASES, ids=[m for _, m in OUTCOME_CASES])
def test_an_outcome_no_store_can_hold_is_refused_when_made(make: object, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        make()  # type: ignore[operator]
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_list_items_are_checked_like_object_values() -> None:
    for item, message in (
        (float("nan"), "args.xs[1] holds nan"),
        ("a\x00", "args.xs[1] contains a NUL character"),
        (b"raw", "args.xs[1] holds a bytes"),
    ):
        with pytest.raises(ValidationError, match=re.escape(message)):
            NewJob(kind="k", args={"xs": [1, item]})
    with pytest.raises(ValidationError, match="nested deeper than 64 levels"):
        NewJob(kind="k", args={"xs": _nested(70)})


def test_a_refused_value_is_quoted_short() -> None:
    with pytest.raises(ValidationError) as caught:
        check_state("x" * 1_000_000)
    assert len(str(caught.value)) < 300


def test_a_yes_no_argument_must_be_a_bool() -> None:
    assert check_flag("all", True) is True
    for bad in ("no", 0, None, "False"):
        with pytest.raises(ValidationError, match="all must be True or False"):
            check_flag("all", bad)


def test_states_are_named_or_refused() -> None:
    assert check_state("failed") is JobState.FAILED
    with pytest.raises(ValidationError, match="unknown job state 'bogus': use one of scheduled"):
        check_state("bogus")


def test_storable_text_escapes_what_cannot_be_stored_and_keeps_the_rest() -> None:
    assert storable_text("bad record b'\x00'") == "bad record b'\\x00'"
    assert storable_text("caf\udce9.txt") == "caf\\udce9.txt"
    assert storable_text("plain ünïcode ✓") == "plain ünïcode ✓"
    cut = storable_text("y" * 50_000)
    assert len(cut) == TEXT_LENGTH_MAX
    assert cut.endswith("…")


def test_args_size_is_bounded_by_the_client_setting() -> None:
    check_args_size({"blob": "x" * 100}, 200)
    check_args_size({"blob": "x" * 10_000_000}, None)
    with pytest.raises(ValidationError, match=r"args are 1,048,\d+ bytes of JSON; the limit"):
        check_args_size({"blob": "x" * ARGS_BYTES_MAX_DEFAULT}, ARGS_BYTES_MAX_DEFAULT)


# -- the exact limits: the last value allowed and the first refused -------------------------


def test_tags_up_to_the_limits_are_kept() -> None:
    assert len(NewJob(kind="k", tags=["t"] * 32).tags) == 32
    assert NewJob(kind="k", tags=["x" * 100]).tags == ("x" * 100,)
    with pytest.raises(ValidationError, match="each tag must be a string of 1-100 characters"):
        NewJob(kind="k", tags=["x" * 101])
    with pytest.raises(ValidationError, match="each tag must be a string of 1-100 characters"):
        NewJob(kind="k", tags=[7])


def test_nesting_of_mappings_that_are_not_dicts_counts_each_level_once() -> None:
    """A Mapping that is not a dict takes the general walk, which must count depth as the
    dict path does: 64 levels kept, 65 refused."""

    def chain(levels: int) -> Mapping[str, object]:
        node: Mapping[str, object] = MappingProxyType({"leaf": 1})
        for _ in range(levels - 1):
            node = MappingProxyType({"n": node})
        return node

    assert check_json_object("metadata", chain(64))
    with pytest.raises(ValidationError, match="nested deeper than 64 levels"):
        check_json_object("metadata", chain(65))


def test_nesting_exactly_sixty_four_deep_is_kept() -> None:
    assert NewJob(kind="k", args={"xs": _nested(63)}).args["xs"] == _nested(63)  # 64 levels
    with pytest.raises(ValidationError, match="nested deeper than 64 levels"):
        NewJob(kind="k", args={"xs": _nested(64)})
    deep: dict[str, object] = {}
    node = deep
    for _ in range(63):
        node["n"] = node = {}
    node["leaf"] = 1  # the 64th level
    assert NewJob(kind="k", metadata=deep).metadata == deep
    node["n"] = {"leaf": 1}
    with pytest.raises(ValidationError, match=r"metadata(\.n){64}\.leaf is nested deeper"):
        NewJob(kind="k", metadata=deep)


def test_text_of_exactly_the_longest_length_is_kept() -> None:
    assert Fail("x" * TEXT_LENGTH_MAX).error == "x" * TEXT_LENGTH_MAX
    assert storable_text("y" * TEXT_LENGTH_MAX) == "y" * TEXT_LENGTH_MAX
    assert Cancel(" padded ").reason == " padded "


def test_tuples_are_checked_like_lists() -> None:
    with pytest.raises(ValidationError, match=re.escape("callback payload[1] holds nan")):
        CompleteCallback((1, float("nan")))
    assert ResumeCallback((1, "a")).payload == (1, "a")


def test_the_longest_duration_is_allowed_and_no_longer() -> None:
    assert Snooze(DURATION_MAX_S).seconds == DURATION_MAX_S
    assert RetryAfter(0).seconds == 0.0
    with pytest.raises(ValidationError, match="at most 3155760000 seconds"):
        RetryAfter(DURATION_MAX_S + 1)


def test_args_size_counts_compact_utf8_json_up_to_the_limit() -> None:
    args = {"a": "é"}  # {"a":"é"}: 10 bytes, é taking two
    check_args_size(args, 10)
    with pytest.raises(ValidationError, match="args are 10 bytes of JSON; the limit is 9"):
        check_args_size(args, 9)


def test_a_refused_value_is_quoted_whole_up_to_eighty_characters() -> None:
    exactly = "x" * 78  # its repr, with the quotes, is 80 characters
    with pytest.raises(ValidationError) as caught:
        check_state(exactly)
    assert repr(exactly) in str(caught.value)
    with pytest.raises(ValidationError) as cut:
        check_state(exactly + "y")
    assert f"'{'x' * 78}…" in str(cut.value)


def test_values_are_made_with_keywords_only() -> None:
    with pytest.raises(TypeError):
        NewJob("send_email")  # type: ignore[misc]


def test_a_bool_is_not_a_number_of_seconds() -> None:
    with pytest.raises(ValidationError, match="Snooze seconds must be a number of seconds"):
        Snooze(True)


def test_run_at_must_be_a_datetime() -> None:
    with pytest.raises(ValidationError, match="run_at must be a timezone-aware datetime"):
        NewJob(kind="k", run_at="2030-01-01T00:00:00Z")  # type: ignore[arg-type]


def test_a_state_is_taken_by_member_or_value() -> None:
    assert check_state(JobState.RUNNING) is JobState.RUNNING
    assert check_state("running") is JobState.RUNNING


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": 5}, "invalid job kind 5"),
        ({"priority": 2.0}, "priority must be an integer from 1 to 4, got 2.0"),
        ({"tags": {"a"}}, "tags must be a list of strings"),
    ],
)
def test_values_of_the_wrong_type_are_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        NewJob(**{"kind": "k", **fields})  # type: ignore[arg-type]


def test_a_callback_payload_may_nest_sixty_four_deep() -> None:
    assert ResumeCallback(_nested(64)).payload == _nested(64)  # the leaf 64 levels down
    with pytest.raises(ValidationError, match="nested deeper than 64 levels"):
        ResumeCallback(_nested(65))


def test_outcomes_have_their_documented_defaults_and_checks() -> None:
    assert Cancel().reason == "cancelled by handler"
    assert FailCallback().error == "failed by callback"
    assert Fail("x").terminal is False
    with pytest.raises(ValidationError, match="traceback contains a NUL character"):
        Fail("x", traceback="line\x00")


def test_jobs_are_made_with_keywords_only() -> None:
    at = datetime(2030, 1, 1)
    with pytest.raises(TypeError):
        Job(1, "k", "default", {}, JobState.AVAILABLE, 2, 0, 1, 0, at, at)  # type: ignore[misc]


def test_a_mapping_that_is_not_a_dict_is_taken_and_checked_like_one() -> None:
    from types import MappingProxyType

    assert NewJob(kind="k", args=MappingProxyType({"a": 1})).args == {"a": 1}
    with pytest.raises(ValidationError, match="non-string key"):
        NewJob(kind="k", args=MappingProxyType({1: "x"}))
    with pytest.raises(ValidationError, match="non-string key"):
        NewJob(kind="k", args={"a": MappingProxyType({2: "x"})})


# -- bounds: every time and number a caller gives fits every store and reads back ---------------

_UTC_PLUS_14 = timezone(timedelta(hours=14))
_UTC_MINUS_14 = timezone(timedelta(hours=-14))


@pytest.mark.parametrize(
    "run_at",
    [
        # inside Python's range as given, outside it once in UTC
        datetime(1, 1, 1, tzinfo=_UTC_PLUS_14),
        datetime(9999, 12, 31, 23, tzinfo=_UTC_MINUS_14),
        # in range in UTC, outside the bounds every store and display can hold
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc),
        datetime(9999, 1, 1, 0, 0, 0, 1, tzinfo=timezone.utc),
        datetime.min.replace(tzinfo=timezone.utc),
        datetime.max.replace(tzinfo=timezone.utc),
    ],
)
def test_a_run_at_outside_the_bounds_is_refused_naming_them(run_at: datetime) -> None:
    with pytest.raises(ValidationError, match=r"^run_at must be from 1970-01-01 to 9999-01-01 UTC"):
        NewJob(kind="k", run_at=run_at)


def test_a_run_at_on_either_bound_is_kept_in_utc() -> None:
    earliest = NewJob(kind="k", run_at=INSTANT_MIN.astimezone(_UTC_PLUS_14))
    latest = NewJob(kind="k", run_at=INSTANT_MAX.astimezone(_UTC_MINUS_14))
    assert (earliest.run_at, latest.run_at) == (INSTANT_MIN, INSTANT_MAX)
    assert earliest.run_at is not None
    assert earliest.run_at.tzinfo is timezone.utc


class _BrokenZone(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta:
        raise RuntimeError("this zone is broken")


class _Later(datetime):
    """A datetime subclass, as some libraries hand out."""


def test_a_zone_that_fails_is_refused_and_a_subclass_is_kept_as_a_datetime() -> None:
    with pytest.raises(ValidationError, match="timezone-aware datetime"):
        NewJob(kind="k", run_at=datetime(2030, 1, 1, tzinfo=_BrokenZone()))
    job = NewJob(kind="k", run_at=_Later(2030, 1, 1, 12, tzinfo=_UTC_PLUS_14))
    assert type(job.run_at) is datetime
    assert job.run_at == datetime(2029, 12, 31, 22, tzinfo=timezone.utc)


HUGE = 10**5000


@pytest.mark.parametrize(
    "make",
    [
        lambda: NewJob(kind="k", priority=HUGE),
        lambda: NewJob(kind="k", max_attempts=-HUGE),
        lambda: Snooze(HUGE),
        lambda: RetryAfter(HUGE),
        lambda: NewJob(kind="k", args={"n": HUGE}),
        lambda: NewJob(kind="k", metadata={"n": [-HUGE]}),
        lambda: ResumeCallback({"n": HUGE}),
        lambda: check_id("a job id", HUGE),
    ],
)
def test_a_number_of_five_thousand_digits_is_a_validation_error(make: Any) -> None:
    with pytest.raises(ValidationError, match="digits"):
        make()


def test_json_integers_up_to_the_digit_bound_are_kept() -> None:
    widest = 10**JSON_INTEGER_DIGITS_MAX - 1  # 4,300 nines
    assert NewJob(kind="k", args={"n": widest, "m": -widest}).args == {"n": widest, "m": -widest}
    with pytest.raises(ValidationError, match="at most 4,300 digits"):
        NewJob(kind="k", args={"n": widest + 1})


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_a_refused_value_is_shown_without_raising() -> None:
    assert shown(HUGE) == "an integer of about 5,000 digits"
    assert shown(_Unprintable()) == "a _Unprintable"
    with pytest.raises(ValidationError, match="got a _Unprintable"):
        NewJob(kind="k", priority=_Unprintable())  # type: ignore[arg-type]
