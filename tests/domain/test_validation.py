"""Bad input is refused with one clear sentence, before any store is touched."""

from datetime import datetime

import pytest

from awa.domain import NewJob, RetryAfter, Snooze, ValidationError

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


def test_valid_job_keeps_its_values() -> None:
    job = NewJob(kind="send_email", args={"to": "a@b.c"}, queue="email", priority=1, tags=["x"])
    assert (job.queue, job.priority, job.max_attempts, job.tags) == ("email", 1, 25, ("x",))


@pytest.mark.parametrize("outcome", [RetryAfter, Snooze])
def test_negative_or_infinite_delays_are_refused(outcome: type) -> None:
    for bad in (-1, float("inf"), "5"):
        with pytest.raises(ValidationError):
            outcome(bad)
