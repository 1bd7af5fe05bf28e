"""The insert router (``adapters/postgres/inserts/router.py``) through ``BulkInserts``: the
store, not its caller, decides whether a batch is streamed by COPY while it is being made, or
made whole first and inserted as ``insert`` inserts it (one statement, COPY, or the unique
insert), and it checks the arguments once on every route."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence

import pytest

from awa.adapters.memory import ManualClock, MemoryStore
from awa.adapters.postgres import PostgresStore
from awa.adapters.postgres.inserts.copy_encoding import COPY_CHUNK_JOBS
from awa.adapters.postgres.inserts.router import streams
from awa.domain import Job, NewJob, Unique, UniqueConflict, ValidationError
from awa.ports import BATCH_SIZE_MAX, AsyncInserts, BulkInserts, StreamsInserts


def _requests(count: int) -> list[NewJob]:
    return [NewJob(kind="k", queue=("a", "b")[n % 2], args={"n": n}) for n in range(count)]


def _chunks(jobs: Sequence[NewJob], size: int = 200) -> Iterator[Sequence[NewJob]]:
    return (jobs[start : start + size] for start in range(0, len(jobs), size))


def _failing_after(jobs: Sequence[NewJob], good_chunks: int) -> Iterator[Sequence[NewJob]]:
    yield from list(_chunks(jobs))[:good_chunks]
    raise ValidationError("item 999: bad args")


def _made(answer: list[Job] | list[int]) -> list[Job]:
    """The jobs an insert returned (``ids=False``)."""
    jobs = [job for job in answer if isinstance(job, Job)]
    assert len(jobs) == len(answer)
    return jobs


def _args(store: PostgresStore, ids: Sequence[int | Job]) -> list[object]:
    """The args stored under each id an insert returned (``ids=True``)."""
    return [store.get_job(job_id).args for job_id in ids if isinstance(job_id, int)]


def _next_id(store: PostgresStore) -> int:
    [job] = store.insert([NewJob(kind="probe")])
    return job.id


def test_the_older_capabilities_are_bulk_inserts_under_their_old_names(
    store: PostgresStore,
) -> None:
    assert AsyncInserts is BulkInserts
    assert StreamsInserts is BulkInserts
    assert isinstance(store, BulkInserts)
    assert not isinstance(MemoryStore(ManualClock()), BulkInserts)


def test_a_batch_streams_only_beyond_one_copy_message_without_unique_keys() -> None:
    assert not streams(1, unique=False)
    assert not streams(COPY_CHUNK_JOBS, unique=False)
    assert streams(COPY_CHUNK_JOBS + 1, unique=False)
    assert streams(BATCH_SIZE_MAX, unique=False)
    assert not streams(BATCH_SIZE_MAX + 1, unique=False)
    assert not streams(COPY_CHUNK_JOBS + 1, unique=True)


@pytest.mark.parametrize("count", [1, 3, COPY_CHUNK_JOBS, 450])
def test_every_route_writes_the_jobs_in_order(store: PostgresStore, count: int) -> None:
    requests = _requests(count)
    inserted = _made(store.insert_batch(count, _chunks(requests), unique=False))
    assert [job.args for job in inserted] == [request.args for request in requests]
    assert [store.get_job(job.id) for job in inserted] == inserted
    ids = store.insert_batch(count, _chunks(requests), unique=False, ids=True)
    assert _args(store, ids) == [request.args for request in requests]
    assert store.count_jobs() == 2 * count


def test_a_batch_made_whole_is_refused_before_any_sql_and_a_streamed_one_after_its_ids(
    store: PostgresStore,
) -> None:
    before = _next_id(store)
    requests = _requests(COPY_CHUNK_JOBS)
    with pytest.raises(ValidationError, match="item 999"):
        store.insert_batch(COPY_CHUNK_JOBS, _failing_after(requests, 0), unique=False)
    assert _next_id(store) == before + 1  # nothing reserved: the batch never reached SQL
    streamed = _requests(450)
    with pytest.raises(ValidationError, match="item 999"):
        store.insert_batch(450, _failing_after(streamed, 1), unique=False)
    assert _next_id(store) == before + 2 + 450  # its ids were reserved, then rolled back
    assert store.count_jobs() == 3


def test_a_batch_with_a_unique_key_takes_the_unique_insert_whatever_its_size(
    store: PostgresStore,
) -> None:
    requests = [*_requests(450), NewJob(kind="k", args={"n": -1}, unique=Unique(by_args=True))]
    inserted = _made(store.insert_batch(451, _chunks(requests), unique=True))
    assert inserted[-1].unique_key is not None
    with pytest.raises(UniqueConflict):
        store.insert_batch(451, _chunks(requests), unique=True)
    skipped = store.insert_batch(451, _chunks(requests), unique=True, on_conflict="skip")
    assert skipped[-1] == inserted[-1]
    assert store.count_jobs() == 2 * 450 + 1


def test_a_unique_key_the_caller_did_not_declare_is_refused_by_the_stream(
    store: PostgresStore,
) -> None:
    requests = [*_requests(300), NewJob(kind="k", unique=Unique())]
    with pytest.raises(ValidationError, match="without unique keys"):
        store.insert_batch(301, _chunks(requests), unique=False)
    assert store.count_jobs() == 0


@pytest.mark.parametrize(("count", "made"), [(3, 2), (3, 4), (450, 449), (450, 451)])
def test_chunks_that_make_more_or_fewer_jobs_than_counted_are_refused(
    store: PostgresStore, count: int, made: int
) -> None:
    with pytest.raises(ValidationError, match=f"the {count}"):
        store.insert_batch(count, _chunks(_requests(made)), unique=False)
    assert store.count_jobs() == 0


@pytest.mark.parametrize("count", [-1, True, "3", 2.0])
def test_a_count_that_is_no_count_is_refused(store: PostgresStore, count: object) -> None:
    with pytest.raises(ValidationError, match="a batch's count is a number of jobs"):
        store.insert_batch(count, iter([]), unique=False)  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [2, 450])
def test_on_conflict_is_checked_on_both_routes(store: PostgresStore, count: int) -> None:
    asked: list[int] = []

    def chunks() -> Iterator[Sequence[NewJob]]:
        for chunk in _chunks(_requests(count)):
            asked.append(len(chunk))
            yield chunk

    with pytest.raises(ValidationError, match="on_conflict"):
        store.insert_batch(count, chunks(), unique=False, on_conflict="ignore")  # type: ignore[arg-type]
    assert store.count_jobs() == 0
    assert asked == ([] if count > COPY_CHUNK_JOBS else [count])  # the stream asks for none


def test_more_than_a_batch_is_made_whole_and_refused_as_insert_refuses_it(
    store: PostgresStore,
) -> None:
    count = BATCH_SIZE_MAX + 1
    with pytest.raises(ValidationError, match=f"at most {BATCH_SIZE_MAX} jobs per call"):
        store.insert_batch(count, _chunks(_requests(count)), unique=False)


def test_awaited_every_route_writes_the_jobs_on_the_pool_then_on_the_loops_connection(
    make_store: Callable[..., PostgresStore],
) -> None:
    store = make_store()

    async def story() -> list[list[int]]:
        answers = []
        for count in (1, 3, 450, 1, 3, 450):  # the first through the pool, then the loop's own
            requests = _requests(count)
            jobs = _made(await store.insert_batch_async(count, _chunks(requests), unique=False))
            answers.append([job.args["n"] for job in jobs])
            ids = await store.insert_batch_async(count, _chunks(requests), unique=False, ids=True)
            assert _args(store, ids) == [job.args for job in jobs]
            if len(answers) == 3:
                for _ in range(1000):
                    if store._loop_inserts.connected:
                        break
                    await asyncio.sleep(0.005)
                assert store._loop_inserts.connected
        await store.close_async()
        return answers

    assert asyncio.run(story()) == [list(range(n)) for n in (1, 3, 450)] * 2
    assert store.count_jobs() == 2 * 2 * (1 + 3 + 450)


def test_awaited_before_the_loops_connection_a_streamed_batch_keeps_the_streams_refusals(
    make_store: Callable[..., PostgresStore],
) -> None:
    """While the loop has no connection of its own, the chunks are made whole and inserted
    through the pool: a unique key or a miscount is refused as the COPY route refuses it."""
    store = make_store()
    unique = [*_requests(300), NewJob(kind="k", unique=Unique())]

    async def story() -> None:
        assert not store._loop_inserts.connected
        with pytest.raises(ValidationError, match="without unique keys"):
            await store.insert_streamed_async(301, _chunks(unique))
        with pytest.raises(ValidationError, match="the 300"):
            await store.insert_batch_async(300, _chunks(_requests(299)), unique=False)
        inserted = await store.insert_streamed_ids_async(300, _chunks(_requests(300)))
        assert len(inserted) == 300

    asyncio.run(story())
    assert store.count_jobs() == 300
