"""A batch of one shape, decided once: ``NewJob.with_args`` and ``decisions.create_jobs`` give
exactly what a request made in full and ``create_job`` per request give."""

from datetime import timedelta, timezone
from random import Random

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from awa.domain import NewJob, Unique, ValidationError, decisions
from awa.domain.validation import compact_json
from awa.testing.strategies import NOW, json_objects, new_jobs

_uniques = st.none() | st.builds(Unique, by_args=st.booleans(), period=st.none() | st.just(60))


def _in_full(template: NewJob, args: dict[str, object]) -> NewJob:
    """The request ``with_args`` stands for, made the long way: every field through
    NewJob's converters and validators."""
    fields = attrs.asdict(template, recurse=False)
    fields.pop("_args_json")
    return NewJob(**{**fields, "args": args})


def _every_field(job: NewJob) -> dict[str, object]:
    """Every slot, the private cache included: one that with_args forgot to set raises."""
    return attrs.asdict(job, recurse=False)


@given(new_jobs(), _uniques, json_objects())
def test_with_args_is_the_request_made_in_full_with_those_args(
    template: NewJob, unique: Unique | None, args: dict[str, object]
) -> None:
    template = attrs.evolve(template, unique=unique)
    made = template.with_args(args)
    expected = _in_full(template, args)
    assert made == expected
    assert _every_field(made) == _every_field(expected)
    assert made.args_json() == compact_json(args)
    assert made.unique_digest() == expected.unique_digest()


def test_with_args_gives_each_job_args_and_metadata_of_its_own() -> None:
    template = NewJob(kind="k", metadata={"traceparent": "00-a-b-01"})
    assert template.args_json() == "{}"  # cached on the template
    args = {"n": 1}
    made = template.with_args(args)
    assert made.args is not args
    assert made.metadata is not template.metadata
    assert made.args_json() == '{"n":1}'
    assert template.with_args({"n": 2}).args_json() == '{"n":2}'


@pytest.mark.parametrize(
    "bad_args",
    [{"n": float("nan")}, {"s": "a\x00b"}, {1: "x"}, ["not", "an", "object"], {"o": object()}],
)
def test_with_args_refuses_what_a_request_made_in_full_refuses(bad_args: object) -> None:
    template = NewJob(kind="k", queue="q")
    with pytest.raises(ValidationError) as in_full:
        NewJob(kind="k", queue="q", args=bad_args)  # type: ignore[arg-type]
    with pytest.raises(ValidationError) as shared:
        template.with_args(bad_args)  # type: ignore[arg-type]
    assert str(shared.value) == str(in_full.value)


_batches = st.lists(
    st.tuples(new_jobs(), _uniques, st.lists(json_objects(3), min_size=1, max_size=4)),
    min_size=1,
    max_size=4,
)


@given(_batches, st.randoms(use_true_random=False), st.booleans())
def test_create_jobs_decides_what_create_job_decides_one_by_one(
    shapes: list[tuple[NewJob, Unique | None, list[dict[str, object]]]],
    random: Random,
    shuffled: bool,
) -> None:
    requests = []
    for template, unique, argses in shapes:
        first = attrs.evolve(template, unique=unique)
        requests += [first, *(first.with_args(args) for args in argses)]
        requests.append(_in_full(first, argses[0]))  # equal values, other objects
    if shuffled:  # runs of one shape broken up
        random.shuffle(requests)
    ids = list(range(100, 100 + len(requests)))
    assert decisions.create_jobs(requests, job_ids=ids, now=NOW) == [
        decisions.create_job(request, job_id=job_id, now=NOW)
        for request, job_id in zip(requests, ids, strict=True)
    ]


def test_create_jobs_gives_each_job_of_a_shape_its_id_args_and_metadata() -> None:
    template = NewJob(kind="k", queue="q", run_at=NOW + timedelta(seconds=5), tags=("t",))
    requests = [template.with_args({"n": n}) for n in range(3)]
    jobs = decisions.create_jobs(requests, job_ids=[7, 8, 9], now=NOW)
    assert [(job.id, job.args) for job in jobs] == [(7, {"n": 0}), (8, {"n": 1}), (9, {"n": 2})]
    assert {job.state.value for job in jobs} == {"scheduled"}
    assert len({id(job.metadata) for job in jobs}) == 3


def test_create_jobs_keys_every_unique_job_by_its_own_args() -> None:
    template = NewJob(kind="k", unique=Unique())
    jobs = decisions.create_jobs(
        [template.with_args({"n": 1}), template.with_args({"n": 2})], job_ids=[1, 2], now=NOW
    )
    assert jobs[0].unique_key != jobs[1].unique_key


def test_create_jobs_keeps_the_instant_each_request_gave_run_at_in_utc() -> None:
    later = NOW + timedelta(hours=1)
    elsewhere = (later + timedelta(hours=1)).astimezone(timezone(timedelta(hours=2)))
    requests = [NewJob(kind="k", run_at=later), NewJob(kind="k", run_at=elsewhere)]
    jobs = decisions.create_jobs(requests, job_ids=[1, 2], now=NOW)
    assert [job.run_at for job in jobs] == [later, elsewhere]
    assert [job.run_at.tzinfo for job in jobs] == [timezone.utc, timezone.utc]


def test_create_jobs_needs_an_id_for_every_request() -> None:
    with pytest.raises(ValueError, match="zip"):
        decisions.create_jobs([NewJob(kind="k")], job_ids=[1, 2], now=NOW)


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "other"},
        {"queue": "other"},
        {"priority": 1},
        {"max_attempts": 3},
        {"run_at": NOW + timedelta(seconds=30)},
        {"tags": ("t",)},
        {"unique": Unique()},
    ],
)
def test_create_jobs_decides_again_for_a_request_that_differs_in_one_field(
    change: dict[str, object],
) -> None:
    first = NewJob(kind="k", queue="q", args={"n": 0})
    other = attrs.evolve(first, **change)  # every other field the same object as first's
    requests = [first, first.with_args({"n": 1}), other, first.with_args({"n": 2})]
    assert decisions.create_jobs(requests, job_ids=[1, 2, 3, 4], now=NOW) == [
        decisions.create_job(request, job_id=n, now=NOW) for n, request in enumerate(requests, 1)
    ]
