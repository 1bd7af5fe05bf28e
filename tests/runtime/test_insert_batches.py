"""``insert_many`` makes items of one shape from one request (``NewJob.with_args``): what it
makes must be what each item made alone makes, and one bad item still refuses the batch."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import awa
from awa.client.requests import Requests
from awa.domain import NewJob
from awa.runtime.registry import TaskRegistry

from .conftest import Backend, memory_clients, run

LATER = datetime(2031, 1, 1, tzinfo=timezone.utc)
ELSEWHERE = LATER.astimezone(timezone(timedelta(hours=2)))  # the same instant


class _Zone(tzinfo):
    """A zone of the caller's own that compares by value and so cannot be hashed."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=3)

    def tzname(self, dt: datetime | None) -> str:
        return "THREE"

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Zone)

    __hash__ = None  # type: ignore[assignment]


@dataclass
class Send:
    to: str
    n: int = 0


@awa.job_kind(kind="declared", queue="declared_q", priority=1, max_attempts=4)
@dataclass
class Declared:
    n: int


@dataclass
class Registered:
    n: int


def _items() -> list[Any]:
    """Runs of one shape broken up by every kind of item made on its own, and shapes that
    look alike but must not share a request."""
    spec = awa.InsertSpec
    return [
        Send("a"),
        spec(args=Send("b", 1)),  # the same shape as a bare item
        spec(args=Send("c"), queue="q"),
        spec(args={"n": 1}, kind="report"),
        spec(args={"n": 2}, kind="report"),
        spec(args={"n": 3}, kind="other_report"),
        Declared(1),
        spec(args=Declared(2), priority=3),
        Registered(1),
        spec(args=Send("d"), unique=awa.Unique()),
        spec(args=Send("e"), unique=awa.Unique()),
        spec(args=Send("f"), metadata={"trace": "x"}),
        spec(args=Send("g"), tags=["a", "b"]),
        spec(args=Send("h"), tags=("a", "b")),
        spec(args=Send("i"), run_at=LATER),
        spec(args=Send("j"), run_at=ELSEWHERE),
        spec(args=Send("k"), run_at=LATER),
        spec(args=Send("l"), priority=1, max_attempts=2),
        spec(args=Send("m"), priority=1, max_attempts=2),
        Send("n", 5),
        # one instant in equal zones of other names, a named zone, a zone that cannot hash
        spec(args=Send("o"), run_at=LATER.astimezone(timezone(timedelta(hours=1), "CET"))),
        spec(args=Send("p"), run_at=LATER.astimezone(timezone(timedelta(hours=1)))),
        spec(args=Send("q"), run_at=LATER.astimezone(ZoneInfo("Europe/Berlin"))),
        spec(args=Send("r"), run_at=LATER.astimezone(ZoneInfo("Europe/Berlin"))),
        spec(args=Send("s"), run_at=LATER.astimezone(_Zone())),
        spec(args=Send("t"), run_at=LATER.astimezone(_Zone())),
    ]


def _operations() -> Requests:
    registry = TaskRegistry()

    async def handle(job: object) -> None:
        raise AssertionError("never run")

    registry.add(Registered, handle, queue="registered_q", kind=None)
    return Requests(registry, 1 << 20)


def _alone(ops: Requests, items: list[Any]) -> list[NewJob]:
    """The path every item took before batches shared requests: each made on its own. A
    refusal is raised as a batch words it: naming the item's position."""
    made = []
    for position, item in enumerate(items):
        spec = item if isinstance(item, awa.InsertSpec) else awa.InsertSpec(args=item)
        try:
            made.append(ops.new_job(spec))
        except (awa.ValidationError, awa.SerializationError) as exc:
            raise type(exc)(f"item {position}: {exc}") from None
    return made


def _fields(job: NewJob) -> dict[str, Any]:
    fields = attrs.asdict(job, recurse=False)
    fields["_args_json"] = job.args_json()
    when = job.run_at
    fields["run_at_zone"] = None if when is None else (when.utcoffset(), when.tzname())
    return fields


def test_a_mixed_batch_makes_what_each_item_made_alone_makes() -> None:
    ops = _operations()
    items = _items()
    made = ops.new_jobs(items)
    assert [_fields(job) for job in made] == [_fields(job) for job in _alone(ops, items)]
    assert made[0].queue == "default"
    assert made[6].queue == "declared_q"
    assert made[8].queue == "registered_q"
    assert made[15].run_at == ELSEWHERE  # the same instant, kept in UTC as every store keeps it
    assert made[15].run_at.tzinfo is timezone.utc


def test_items_of_one_shape_get_args_and_metadata_of_their_own() -> None:
    made = _operations().new_jobs([Send(str(n), n) for n in range(3)])
    assert [job.args for job in made] == [{"to": str(n), "n": n} for n in range(3)]
    assert len({id(job.metadata) for job in made}) == 3


BAD_AFTER_GOOD: list[tuple[str, Any, type[Exception], str]] = [
    ("args", {"n": float("nan")}, awa.ValidationError, "args.n holds nan"),
    ("args", {"s": "a\x00b"}, awa.ValidationError, "args.s contains a NUL character"),
    ("priority", True, awa.ValidationError, "priority must be an integer from 1 to 4, got True"),
    ("tags", "ab", awa.ValidationError, "tags must be a list of strings, got 'ab'"),
    ("run_at", datetime(2031, 1, 1), awa.ValidationError, "run_at must be a timezone-aware"),
    ("args", {"blob": "x" * 2_000}, awa.ValidationError, "(max_args_bytes)"),
]


@pytest.mark.parametrize(
    ("option", "value", "error", "message"), BAD_AFTER_GOOD, ids=[m for *_, m in BAD_AFTER_GOOD]
)
def test_one_bad_item_among_good_ones_of_its_shape_refuses_the_batch(
    backend: Backend, option: str, value: Any, error: type[Exception], message: str
) -> None:
    async def story() -> None:
        _, store, _ = backend.clients()
        client = awa.AsyncClient(store=store, max_args_bytes=1_000)
        good = {"args": {"n": 1}, "priority": 1, "tags": ("a", "b"), "run_at": LATER}
        items = [awa.InsertSpec(kind="k", **good) for _ in range(40)]
        items.insert(25, awa.InsertSpec(kind="k", **{**good, option: value}))
        with pytest.raises(error) as refused:
            await client.insert_many(items)
        assert message in str(refused.value)
        assert "\n" not in str(refused.value)
        assert await client.count_jobs() == 0

    run(story)


def test_an_args_object_that_cannot_be_serialized_refuses_its_batch(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        items = [Send("a", n) for n in range(10)] + [Send("b", object())]  # type: ignore[arg-type]
        with pytest.raises(awa.ValidationError, match=r"args\.n holds a object"):
            await client.insert_many(items)
        assert await client.count_jobs() == 0

    run(story)


def test_a_mixed_batch_is_stored_as_made(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()

        @client.task(Registered, queue="registered_q")
        async def handle(job: object) -> None:
            raise AssertionError("never run")

        items = _items()
        inserted = await client.insert_many(items)
        expected = _alone(client._requests, items)
        assert [(j.kind, j.queue, j.args, j.priority, j.max_attempts) for j in inserted] == [
            (n.kind, n.queue, n.args, n.priority, n.max_attempts) for n in expected
        ]
        assert [(j.tags, j.metadata, j.run_at) for j in inserted] == [
            (n.tags, n.metadata, n.run_at or j.created_at)
            for n, j in zip(expected, inserted, strict=True)
        ]
        assert [j.unique_key is not None for j in inserted] == [
            n.unique is not None for n in expected
        ]
        assert inserted == [await client.get_job(j.id) for j in inserted]

    run(story)


def test_args_of_no_supported_type_refuse_their_batch(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        with pytest.raises(awa.SerializationError, match="got int"):
            await client.insert_many([Send("a"), Send("b"), 5])
        assert await client.count_jobs() == 0

    run(story)


def test_a_task_added_between_inserts_decides_the_queue_of_later_ones() -> None:
    async def story() -> None:
        _, _, [client] = memory_clients()
        before = await client.insert(Registered(1))
        again = await client.insert(Registered(2))

        @client.task(Registered, queue="registered_q")
        async def handle(job: object) -> None:
            raise AssertionError("never run")

        after = await client.insert_many([Registered(3), Registered(4)])
        assert [job.queue for job in (before, again, *after)] == [
            "default",
            "default",
            "registered_q",
            "registered_q",
        ]

    run(story)


def test_one_by_one_inserts_of_one_shape_make_what_each_made_alone_makes() -> None:
    ops = _operations()
    items = _items()
    for _ in range(2):  # the second round makes each from the request the first kept
        made = [ops.new_jobs([item])[0] for item in items]
        assert [_fields(job) for job in made] == [_fields(job) for job in _alone(ops, items)]


_OPTION_VALUES: dict[str, list[Any]] = {
    "kind": ["report", "other", "bad kind"],
    "queue": ["q", "r", ""],
    "priority": [1, 3, True, 9],
    "max_attempts": [1, 25],
    "run_at": [LATER, ELSEWHERE, datetime(2031, 1, 1), date(2031, 1, 1)],
    "tags": [(), ["a"], ("a",), ["a", "b"], "ab"],
    "metadata": [{"m": 1}, {"m": 2}, {"traceparent": "x"}],
    "unique": [awa.Unique(), awa.Unique(by_args=False)],
}
_options = st.dictionaries(
    st.sampled_from(sorted(_OPTION_VALUES)), st.sampled_from(range(5)), max_size=2
).map(lambda picks: {k: _OPTION_VALUES[k][i % len(_OPTION_VALUES[k])] for k, i in picks.items()})
_args = st.sampled_from(
    [Send("a"), Send("b", 2), Declared(1), Registered(1), {"n": 1}, {"n": float("nan")}]
)


@settings(max_examples=300, deadline=None)
@given(_options, st.data())
def test_any_batch_is_made_or_refused_as_its_items_alone_are(
    base: dict[str, Any], data: st.DataObject
) -> None:
    """Items share most options and differ in one or two, so that look-alike shapes meet."""
    varied = data.draw(st.lists(st.sampled_from(sorted(_OPTION_VALUES)), min_size=1, max_size=2))
    args = data.draw(st.lists(_args, min_size=1, max_size=2))
    drawn = data.draw(
        st.lists(
            st.tuples(st.sampled_from(args), st.sampled_from(varied), st.sampled_from(range(5))),
            min_size=2,
            max_size=8,
        )
    )
    ops = _operations()
    items = [
        awa.InsertSpec(
            args=item, **{**base, key: _OPTION_VALUES[key][i % len(_OPTION_VALUES[key])]}
        )
        for item, key, i in drawn
    ]
    refused: Exception | None = None
    try:
        expected = [_fields(job) for job in _alone(ops, items)]
    except (awa.ValidationError, awa.SerializationError) as alone:
        refused = alone
    if refused is not None:  # the first bad item, in the same words, named by its position
        with pytest.raises(type(refused), match=f"^{re.escape(str(refused))}$"):
            ops.new_jobs(items)
        return
    for _ in range(2):  # and again, from the requests the first call kept
        assert [_fields(job) for job in ops.new_jobs(items)] == expected


@pytest.mark.parametrize("base", [{}, {"queue": "q", "tags": ["a"]}, {"metadata": {"m": 1}}])
def test_every_two_values_of_an_option_in_one_batch_are_made_as_alone(
    base: dict[str, Any],
) -> None:
    """Each option, each ordered pair of its values, around an item of the first again."""
    for key, values in _OPTION_VALUES.items():
        for first, second in itertools.product(values, repeat=2):
            items = [
                awa.InsertSpec(args=Send("a", n), **{**base, key: value})
                for n, value in enumerate((first, second, first))
            ]
            ops = _operations()
            refused: Exception | None = None
            try:
                expected = [_fields(job) for job in _alone(ops, items)]
            except awa.ValidationError as alone:
                refused = alone
            if refused is not None:
                with pytest.raises(awa.ValidationError, match=f"^{re.escape(str(refused))}$"):
                    ops.new_jobs(items)
                continue
            assert [_fields(job) for job in ops.new_jobs(items)] == expected, (key, first, second)


@pytest.mark.parametrize("bad_at", [0, 199, 200, 777, 999])
def test_one_bad_item_in_a_batch_of_many_chunks_refuses_it_whatever_its_place(
    backend: Backend, bad_at: int
) -> None:
    """On PostgreSQL a batch of more than one chunk is streamed: made a chunk at a time while
    the last is written. A bad item in any chunk still refuses the whole batch."""

    async def story() -> None:
        _, _, [client] = backend.clients()
        items = [Send("a", n) for n in range(1_000)]
        items[bad_at] = Send("b", object())  # type: ignore[arg-type]
        named = rf"^item {bad_at}: .*args\.n holds a object"  # its place in the caller's list
        with pytest.raises(awa.ValidationError, match=named):
            await client.insert_many(items)
        with pytest.raises(awa.ValidationError, match=named):
            await client.insert_many(items, returning="ids")
        assert await client.count_jobs() == 0

    run(story)


@pytest.mark.parametrize("size", [1, 200, 201, 1_000])
def test_insert_many_returning_ids_gives_the_ids_of_the_jobs_it_wrote(
    backend: Backend, size: int
) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        ids = await client.insert_many([Send("a", n) for n in range(size)], returning="ids")
        assert all(type(job_id) is int for job_id in ids)
        assert [(await client.get_job(job_id)).args["n"] for job_id in ids] == list(range(size))
        with pytest.raises(awa.ValidationError, match="returning takes 'jobs' or 'ids'"):
            await client.insert_many([Send("a", 1)], returning=None)  # type: ignore[call-overload]
        assert await client.count_jobs() == size

    run(story)


@pytest.mark.parametrize("size", [3, 1_000])
def test_a_bad_on_conflict_refuses_a_batch_of_any_size(backend: Backend, size: int) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        items = [Send("a", n) for n in range(size)]
        with pytest.raises(awa.ValidationError, match="on_conflict"):
            await client.insert_many(items, on_conflict="bogus")  # type: ignore[arg-type]
        assert await client.count_jobs() == 0

    run(story)


def test_a_refusal_names_the_item_only_in_a_batch_of_several(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        bad = awa.InsertSpec(args=Send("a"), priority=9)
        words = "priority must be an integer from 1 to 4, got 9"
        with pytest.raises(awa.ValidationError, match=f"^item 2: {words}$"):
            await client.insert_many([Send("a"), Send("b"), bad])
        with pytest.raises(awa.ValidationError, match=f"^{words}$"):
            await client.insert_many([bad])
        with pytest.raises(awa.ValidationError, match=f"^{words}$"):
            await client.insert(Send("a"), priority=9)
        assert await client.count_jobs() == 0

    run(story)
