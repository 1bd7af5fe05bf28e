"""Inserts of jobs without unique keys (``inserts/``): several by COPY, one by
``insert_job.sql``. Every column must arrive as given, whatever its text holds, and the jobs
returned must equal what a read of the rows gives back, on every path that inserts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import awa
import awa.client.requests
from awa import Unique, UniqueConflict
from awa.adapters.postgres import WAKEUP_CHANNEL, PostgresStore, insert_jobs, insert_jobs_async
from awa.adapters.postgres.inserts import copy_encoding, encoding
from awa.domain import DatabaseError, Job, JobState, NewJob
from awa.testing.strategies import new_jobs

# every character COPY's text format, an array literal or JSON gives a meaning to
EDGY = 'tab\there, line\nfeed\rreturn \\back\\slash "quoted" {braces},commas NULL \\N é 日本 🎉'
BERLIN = timezone(timedelta(hours=1))


def _requests(now: datetime) -> list[NewJob]:
    return [
        NewJob(
            kind="report.daily:v2-x",
            queue="mail.eu:1-a",
            args={"text": EDGY, "nested": {EDGY: [1, 2.5, None, True, EDGY]}, "empty": ""},
            priority=1,
            max_attempts=1,
            run_at=now + timedelta(hours=1),
            tags=(EDGY, "NULL", "\\N", 'a"b', "{x,y}", " spaced "),
            metadata={"trace": EDGY, "n": 1e20, "m": 7.053818348531159e16},
        ),
        NewJob(
            kind="k",
            queue="mail.eu:1-a",
            args={"big": 2**70, "small": 1e-7, "negative": -0.5, "huge": 1e20, "zero": 0.0},
            priority=4,
            max_attempts=1000,
            run_at=now - timedelta(hours=1),
        ),
        NewJob(kind="k", queue="other", args={"x": 1}),
        NewJob(
            kind="k", queue="other", args={}, run_at=(now + timedelta(minutes=5)).astimezone(BERLIN)
        ),
    ]


def _check_written(
    store: PostgresStore, requests: Sequence[NewJob], inserted: Sequence[Job]
) -> None:
    assert len(inserted) == len(requests)
    assert [job.id for job in inserted] == sorted(job.id for job in inserted)  # request order
    for request, job in zip(requests, inserted, strict=True):
        read = store.get_job(job.id)
        assert job == read  # what the insert returned is what the table holds
        given = (request.kind, request.queue, request.args, request.priority)
        assert (read.kind, read.queue, read.args, read.priority) == given
        assert (read.max_attempts, read.tags, read.metadata) == (
            request.max_attempts,
            request.tags,
            request.metadata,
        )
        assert (read.attempt, read.run_lease, read.errors, read.unique_key) == (0, 0, (), None)
        expected_run_at = request.run_at if request.run_at is not None else read.created_at
        assert read.run_at == expected_run_at
        assert read.run_at.tzinfo == timezone.utc
        assert read.created_at.tzinfo == timezone.utc
        due = read.run_at <= read.created_at
        assert read.state is (JobState.AVAILABLE if due else JobState.SCHEDULED)
        for key, value in request.args.items():  # 1e20 stays a float, 2**70 an int
            assert type(read.args[key]) is type(value)


def test_a_bulk_insert_writes_every_column_as_given(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()
    requests = _requests(datetime.now(timezone.utc))
    _check_written(store, requests, store.insert(requests))


def test_runs_of_one_shape_write_every_column_as_given(
    make_store: Callable[..., PostgresStore],
) -> None:
    """Requests made from one (``NewJob.with_args``, as ``insert_many`` makes a batch) share
    their columns' text in the COPY rows; runs broken up must not carry it over."""
    store = make_store()
    first = _requests(datetime.now(timezone.utc))[0]
    assert first.run_at is not None
    changes: list[dict[str, Any]] = [
        {"kind": "other_kind"},
        {"queue": "other_queue"},
        {"priority": 2},
        {"max_attempts": 3},
        {"run_at": first.run_at + timedelta(minutes=1)},  # still scheduled
        {"run_at": first.run_at - timedelta(days=1)},  # available
        {"tags": ("other",)},
        {"tags": ()},
    ]
    requests = []
    for n, change in enumerate(changes):  # each differs from first in one column
        other = attrs.evolve(first, **change)
        requests += [first.with_args({"n": n}), other, other.with_args({"n": -n})]
    _check_written(store, requests, store.insert(requests))


def test_a_single_insert_writes_every_column_as_given(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()
    for request in _requests(datetime.now(timezone.utc)):
        _check_written(store, [request], store.insert([request]))


def test_inserts_from_the_loop_write_every_column_as_given(pg_clean_url: str) -> None:
    async def story(store: PostgresStore) -> None:
        await store.insert_async([NewJob(kind="k")])  # the first goes through the pool
        for _ in range(1000):
            if store._loop_inserts.connected:
                break
            await asyncio.sleep(0.005)
        assert store._loop_inserts.connected
        requests = _requests(datetime.now(timezone.utc))
        _check_written(store, requests, await store.insert_async(requests))
        _check_written(store, requests[:1], await store.insert_async(requests[:1]))
        await store.close_async()

    with PostgresStore(pg_clean_url) as store:
        asyncio.run(story(store))


@pytest.mark.parametrize("autocommit", [True, False], ids=["autocommit", "in_transaction"])
def test_a_bulk_insert_on_a_callers_connection_writes_every_column_and_waits_for_commit(
    pg_url: str, make_store: Callable[..., PostgresStore], autocommit: bool
) -> None:
    store = make_store()
    requests = _requests(datetime.now(timezone.utc))
    with psycopg.connect(pg_url, autocommit=autocommit, options="-c TimeZone=Asia/Tokyo") as conn:
        inserted = insert_jobs(conn, requests)
        if not autocommit:
            assert store.list_jobs() == []  # the caller's transaction is still open
            conn.commit()
    _check_written(store, requests, inserted)


def test_an_async_bulk_insert_in_the_callers_transaction_vanishes_on_rollback(
    pg_url: str, make_store: Callable[..., PostgresStore]
) -> None:
    store = make_store()
    requests = _requests(datetime.now(timezone.utc))

    async def story() -> list[Job]:
        async with await psycopg.AsyncConnection.connect(pg_url) as conn:
            await insert_jobs_async(conn, [NewJob(kind="gone"), NewJob(kind="gone")])
            await conn.rollback()
            kept = await insert_jobs_async(conn, requests)
            await conn.commit()
            return kept

    kept = asyncio.run(story())
    assert {job.kind for job in store.list_jobs()} == {job.kind for job in kept}
    _check_written(store, requests, kept)


def test_a_bulk_insert_takes_the_injected_clock_for_now(
    make_store: Callable[..., PostgresStore], clock: Any
) -> None:
    store = make_store(clock)
    soon = clock.now() + timedelta(seconds=1)
    inserted = store.insert([NewJob(kind="k"), NewJob(kind="k", run_at=soon)])
    assert [job.created_at for job in inserted] == [clock.now()] * 2
    assert [job.state for job in inserted] == [JobState.AVAILABLE, JobState.SCHEDULED]
    assert [store.get_job(job.id) for job in inserted] == inserted


def test_a_bulk_insert_wakes_each_queue_with_an_available_job_once(
    pg_url: str, make_store: Callable[..., PostgresStore]
) -> None:
    store = make_store()
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    with psycopg.connect(pg_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {WAKEUP_CHANNEL}")
        store.insert(
            [
                NewJob(kind="k", queue="a"),
                NewJob(kind="k", queue="later", run_at=later),
                NewJob(kind="k", queue="a"),
                NewJob(kind="k", queue="b"),
            ]
        )
        heard = sorted(n.payload for n in listener.notifies(timeout=0.5, stop_after=10))
    assert heard == ["a", "b"]


def test_a_failed_copy_writes_nothing_and_leaves_the_store_working(
    make_store: Callable[..., PostgresStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = make_store()
    copy_text = copy_encoding.copy_text

    def mangled(jobs: Sequence[Job], new: Sequence[NewJob]) -> str:
        return copy_text(jobs, new).replace("\tavailable\t", "\tnot_a_state\t")

    monkeypatch.setattr(copy_encoding, "copy_text", mangled)
    with pytest.raises(DatabaseError, match="jobs_state_valid"):
        store.insert([NewJob(kind="k"), NewJob(kind="k")])
    monkeypatch.undo()
    assert store.list_jobs() == []
    assert len(store.insert([NewJob(kind="k"), NewJob(kind="k")])) == 2


def test_a_batch_with_a_unique_job_keeps_the_unique_insert(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()
    unique = NewJob(kind="k", args={"n": 1}, unique=Unique(by_args=True))
    inserted = store.insert([NewJob(kind="k"), unique])
    assert inserted[1].unique_key is not None
    assert store.get_job(inserted[1].id) == inserted[1]
    with pytest.raises(UniqueConflict):
        store.insert([NewJob(kind="k"), unique])
    assert len(store.list_jobs()) == 2


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(new_jobs(), min_size=1, max_size=6))
def test_any_plain_jobs_come_back_as_written(
    make_store: Callable[..., PostgresStore], requests: list[NewJob]
) -> None:
    store = make_store()
    inserted = store.insert(requests)
    assert [store.get_job(job.id) for job in inserted] == inserted
    for request, job in zip(requests, inserted, strict=True):
        assert (job.args, job.tags, job.metadata) == (request.args, request.tags, request.metadata)


@pytest.mark.parametrize(
    ("column", "name", "stored"),
    [
        ("kind", "K" + "k" * 127, True),
        ("kind", "K" + "k" * 128, False),
        ("kind", "_a.b:c-9", True),
        ("kind", "9starts_with_a_digit", False),
        ("kind", "has space", False),
        ("queue", "q" * 128, True),
        ("queue", "q" * 129, False),
        ("queue", "9.q:u-e_ue", True),
        ("queue", "Upper", False),
        ("queue", "-dash_first", False),
        ("queue", "line\nfeed", False),
    ],
)
def test_the_table_refuses_a_name_the_domain_refuses(
    pg_url: str, make_store: Callable[..., PostgresStore], column: str, name: str, stored: bool
) -> None:
    """Migration 0008's checks, written by hand past the adapter, at their exact limits."""
    make_store()
    values = {"kind": "k", "queue": "q", column: name}
    insert = (
        "INSERT INTO awa.jobs (kind, queue, state, run_at, created_at)"
        " VALUES (%(kind)s, %(queue)s, 'available', now(), now())"
    )
    with psycopg.connect(pg_url, autocommit=True) as conn:
        if stored:
            conn.execute(insert, values)
        else:
            with pytest.raises(psycopg.errors.CheckViolation, match=f"jobs_{column}_valid"):
                conn.execute(insert, values)


def test_the_insert_statements_fit_psycopgs_parse_cache() -> None:
    """psycopg parses a statement longer than 4 KB again at every call (about 100 us)."""
    from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

    from awa.adapters.postgres._sql import SQL

    for name in ("insert_jobs", "insert_job", "reserve_job_ids", "notify_wakeup"):
        assert len(SQL[name]) <= MAX_CACHED_STATEMENT_LENGTH, name


# -- insert_many of more than one chunk: streamed (awa.ports.StreamsInserts) -------------------


def _items(count: int, bad_at: int | None = None) -> list[Any]:
    """``insert_many`` items of one shape; the one at ``bad_at`` has args that are not JSON."""
    return [
        awa.InsertSpec(args={"n": n, "bad": object()} if n == bad_at else {"n": n}, kind="k")
        for n in range(count)
    ]


def test_insert_many_streams_chunks_while_copying_and_returns_what_it_wrote(
    pg_clean_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []
    made = awa.client.requests.Requests._new_jobs

    def counting(ops: Any, items: Any, *rest: Any, **options: Any) -> list[NewJob]:
        asked.append(len(items))
        return made(ops, items, *rest, **options)

    monkeypatch.setattr(awa.client.requests.Requests, "_new_jobs", counting)
    with awa.Client(pg_clean_url) as client:
        inserted = client.insert_many(_items(1_050))
        assert asked == [200, 200, 200, 200, 200, 50]  # made a chunk at a time
        assert [job.args["n"] for job in inserted] == list(range(1_050))
        assert client.store.get_job(inserted[-1].id) == inserted[-1]
        asked.clear()
        client.insert_many(_items(200))  # a single chunk: nothing to overlap, made whole
        assert asked == [200]


def test_a_bad_item_in_a_later_chunk_refuses_the_batch_and_writes_nothing(
    pg_clean_url: str,
) -> None:
    with awa.Client(pg_clean_url) as client:
        with pytest.raises(awa.ValidationError, match="args"):
            client.insert_many(_items(1_000, bad_at=750))
        assert client.store.count_jobs() == 0
        assert len(client.insert_many(_items(1_000))) == 1_000


def test_a_bad_item_streamed_from_the_loop_writes_nothing_and_keeps_its_connection(
    pg_clean_url: str,
) -> None:
    async def story() -> None:
        async with awa.AsyncClient(pg_clean_url) as client:
            store = client.store
            assert isinstance(store, PostgresStore)
            await client.insert_many(_items(2))  # the first goes through the pool
            for _ in range(1000):
                if store._loop_inserts.connected:
                    break
                await asyncio.sleep(0.005)
            with pytest.raises(awa.ValidationError, match="args"):
                await client.insert_many(_items(1_000, bad_at=999))
            assert store._loop_inserts.connected  # rolled back, not broken
            inserted = await client.insert_many(_items(1_000))
            assert [job.args["n"] for job in inserted] == list(range(1_000))
            assert store.count_jobs() == 1_002

    asyncio.run(story())


def test_insert_many_with_a_unique_job_among_many_chunks_keeps_the_unique_insert(
    pg_clean_url: str,
) -> None:
    items = [*_items(400), awa.InsertSpec(args={"n": -1}, kind="k", unique=Unique(by_args=True))]
    with awa.Client(pg_clean_url) as client:
        inserted = client.insert_many(items)
        assert inserted[-1].unique_key is not None
        with pytest.raises(UniqueConflict):
            client.insert_many(items)
        assert client.store.count_jobs() == 401


def test_insert_many_returning_ids_writes_the_same_rows_on_every_path(
    pg_clean_url: str,
) -> None:
    with awa.Client(pg_clean_url) as client:
        streamed = client.insert_many(_items(450), returning="ids")
        whole = client.insert_many(_items(3), returning="ids")  # one chunk: made whole
        store = client.store
        assert [store.get_job(job_id).args["n"] for job_id in streamed] == list(range(450))
        assert [store.get_job(job_id).args["n"] for job_id in whole] == [0, 1, 2]
        assert streamed == sorted(streamed)
        assert whole[0] > streamed[-1]
        with pytest.raises(awa.ValidationError, match="returning takes 'jobs' or 'ids'"):
            client.insert_many(_items(450), returning="rows")  # type: ignore[call-overload]
        assert store.count_jobs() == 453


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(new_jobs().filter(lambda job: job.unique is None), min_size=1, max_size=8))
def test_rows_made_without_jobs_are_the_rows_made_from_them(requests: list[NewJob]) -> None:
    """``insert_streamed_ids`` writes ``copy_rows``; ``insert_streamed`` writes
    ``copy_text`` of the jobs the domain made: the same text, so the same rows."""
    now = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    ids = [str(n) for n in range(7, 7 + len(requests))]
    jobs = encoding.jobs_from_reserved(requests, now, ids)
    text, woken = copy_encoding.copy_rows(requests, now, ids)
    assert text == copy_encoding.copy_text(jobs, requests)
    assert woken == encoding.woken_queues(jobs)
