"""The contract of a streamed insert (``awa.ports.StreamsInserts``): the jobs a producer makes
chunk by chunk, written in order, all or none.

An optional capability: a store without it is skipped here, and the client makes every job
before it calls ``insert``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence

import pytest

from awa.domain import JobState, NewJob, Unique, ValidationError
from awa.ports import BATCH_SIZE_MAX, ClaimStore, StreamsInserts
from awa.testing.contract._helpers import StoreFixtures

__all__ = ["StreamedInsertContract"]


def _requests(count: int) -> list[NewJob]:
    return [NewJob(kind="k", queue=("a", "b")[n % 2], args={"n": n}) for n in range(count)]


def _chunks(jobs: Sequence[NewJob], size: int) -> Iterator[Sequence[NewJob]]:
    return (jobs[start : start + size] for start in range(0, len(jobs), size))


class StreamedInsertContract(StoreFixtures):
    """What a producer streams is what the store holds, or nothing is."""

    @pytest.fixture
    def streams(self, store: ClaimStore) -> StreamsInserts:
        if not isinstance(store, StreamsInserts):
            pytest.skip(f"{type(store).__name__} takes no streamed inserts (StreamsInserts)")
        return store

    def test_every_chunk_is_written_in_order(
        self, store: ClaimStore, streams: StreamsInserts
    ) -> None:
        requests = _requests(450)
        inserted = streams.insert_streamed(450, _chunks(requests, 200))
        assert [job.args for job in inserted] == [request.args for request in requests]
        assert [job.id for job in inserted] == sorted(job.id for job in inserted)
        assert all(job.state is JobState.AVAILABLE for job in inserted)
        assert [store.get_job(job.id) for job in (inserted[0], inserted[-1])] == [
            inserted[0],
            inserted[-1],
        ]
        assert store.count_jobs() == 450

    def test_with_ids_alone_the_same_rows_are_written(
        self, store: ClaimStore, streams: StreamsInserts
    ) -> None:
        requests = _requests(450)
        ids = streams.insert_streamed_ids(450, _chunks(requests, 200))
        assert ids == sorted(ids)
        written = [store.get_job(job_id) for job_id in ids]
        assert [job.args for job in written] == [request.args for request in requests]
        assert [job.queue for job in written] == [request.queue for request in requests]
        assert all(job.state is JobState.AVAILABLE for job in written)

    def test_awaited_on_a_loop_the_same_jobs_are_written(
        self, store: ClaimStore, streams: StreamsInserts
    ) -> None:
        requests = _requests(300)

        async def twice() -> list[list[int]]:  # the second may take another connection
            return [
                [job.args["n"] for job in await streams.insert_streamed_async(300, chunks)]
                for chunks in (_chunks(requests, 100), _chunks(requests, 250))
            ]

        async def ids() -> list[int]:
            return await streams.insert_streamed_ids_async(300, _chunks(requests, 200))

        assert asyncio.run(twice()) == [list(range(300))] * 2
        streamed = asyncio.run(ids())
        assert [store.get_job(job_id).args["n"] for job_id in streamed] == list(range(300))
        assert store.count_jobs() == 900

    def test_a_chunk_that_raises_leaves_nothing_written(
        self, store: ClaimStore, streams: StreamsInserts
    ) -> None:
        requests = _requests(400)

        def chunks() -> Iterator[Sequence[NewJob]]:
            yield requests[:200]
            raise ValidationError("item 250: bad args")

        with pytest.raises(ValidationError, match="item 250: bad args"):
            streams.insert_streamed(400, chunks())
        with pytest.raises(ValidationError, match="item 250: bad args"):
            streams.insert_streamed_ids(400, chunks())
        assert store.count_jobs() == 0
        assert len(streams.insert_streamed(2, iter([requests[:2]]))) == 2  # still inserting

    @pytest.mark.parametrize("made", [399, 401])
    def test_more_or_fewer_jobs_than_counted_are_refused(
        self, store: ClaimStore, streams: StreamsInserts, made: int
    ) -> None:
        with pytest.raises(ValidationError, match="400"):
            streams.insert_streamed(400, _chunks(_requests(made), 200))
        with pytest.raises(ValidationError, match="400"):
            streams.insert_streamed_ids(400, _chunks(_requests(made), 200))
        assert store.count_jobs() == 0

    def test_a_unique_job_is_refused(self, store: ClaimStore, streams: StreamsInserts) -> None:
        requests = [*_requests(300), NewJob(kind="k", unique=Unique())]
        with pytest.raises(ValidationError, match="unique"):
            streams.insert_streamed(301, _chunks(requests, 200))
        with pytest.raises(ValidationError, match="unique"):
            streams.insert_streamed_ids(301, _chunks(requests, 200))
        assert store.count_jobs() == 0

    @pytest.mark.parametrize("count", [0, 1, True, "2", BATCH_SIZE_MAX + 1])
    def test_a_count_out_of_bounds_is_refused(self, streams: StreamsInserts, count: object) -> None:
        with pytest.raises(ValidationError, match="a streamed insert takes 2 to"):
            streams.insert_streamed(count, iter([]))  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="a streamed insert takes 2 to"):
            streams.insert_streamed_ids(count, iter([]))  # type: ignore[arg-type]
