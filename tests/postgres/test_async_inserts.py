"""Inserts awaited on an event loop (AsyncInserts): the first through the pool, which checks
the schema, the rest on a connection of the loop's own, recovering from a cancelled insert."""

import asyncio

import pytest

import awa
from awa.adapters.postgres import PostgresStore
from awa.domain import NewJob
from awa.ports import AsyncInserts


async def _until(condition: object, timeout_s: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    give_up = loop.time() + timeout_s
    while not condition():  # type: ignore[operator]
        assert loop.time() < give_up, "condition not reached"
        await asyncio.sleep(0.001)


def test_postgres_store_inserts_from_the_loop_after_the_first_insert(pg_clean_url: str) -> None:
    async def story() -> None:
        with PostgresStore(pg_clean_url) as store:
            assert isinstance(store, AsyncInserts)
            [first] = await store.insert_async([NewJob(kind="k")])
            await _until(lambda: store._loop_inserts.connected)
            later = await store.insert_async([NewJob(kind="k"), NewJob(kind="k")])
            assert [j.id for j in later] == [first.id + 1, first.id + 2]
            assert len(store.list_jobs()) == 3
            await store.close_async()
            assert not store._loop_inserts.connected

    asyncio.run(story())


def test_a_cancelled_insert_leaves_the_next_one_working(pg_clean_url: str) -> None:
    async def story() -> None:
        with PostgresStore(pg_clean_url) as store:
            await store.insert_async([NewJob(kind="k")])
            await _until(lambda: store._loop_inserts.connected)
            big = [NewJob(kind="k", args={"blob": "x" * 100_000}) for _ in range(200)]
            task = asyncio.ensure_future(store.insert_async(big))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            [after] = await store.insert_async([NewJob(kind="after")])
            assert store.get_job(after.id).kind == "after"
            await store.close_async()

    asyncio.run(story())


def test_first_insert_on_an_unmigrated_database_says_what_to_run(empty_database: str) -> None:
    async def story() -> None:
        with PostgresStore(empty_database) as store:
            with pytest.raises(awa.SchemaNotMigrated, match="awa migrate"):
                await store.insert_async([NewJob(kind="k")])
            assert not store._loop_inserts.connected

    asyncio.run(story())


def test_async_client_inserts_through_the_store_capability(pg_clean_url: str) -> None:
    async def story() -> None:
        async with awa.AsyncClient(pg_clean_url) as client:
            jobs = [await client.insert({"n": n}, kind="report") for n in range(5)]
            assert [j.args["n"] for j in jobs] == list(range(5))
            assert len(await client.list_jobs(kind="report")) == 5

    asyncio.run(story())
