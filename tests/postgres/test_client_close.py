"""A client opened from a URL releases its connections; one handed a store leaves it open."""

import asyncio

import awa
from awa.adapters.postgres import PostgresStore


def test_sync_client_from_a_url_closes_its_pool(pg_clean_url: str) -> None:
    with awa.Client(pg_clean_url) as client:
        job = client.insert({"n": 1}, kind="report")
        assert client.get_job(job.id).state is awa.JobState.AVAILABLE
        store = client.store
    assert isinstance(store, PostgresStore)
    assert store.pool.closed


def test_async_client_from_a_url_closes_its_pool(pg_clean_url: str) -> None:
    async def story() -> PostgresStore:
        async with awa.AsyncClient(pg_clean_url) as client:
            await client.insert({"n": 1}, kind="report")
            await client.insert({"n": 2}, kind="report")
            assert len(await client.list_jobs()) == 2
            store = client.store
        assert isinstance(store, PostgresStore)
        return store

    assert asyncio.run(story()).pool.closed


def test_client_given_a_store_leaves_it_open(pg_clean_url: str) -> None:
    with PostgresStore(pg_clean_url) as store:
        with awa.Client(store=store) as client:
            client.insert({"n": 1}, kind="report")
        assert not store.pool.closed
        assert len(store.list_jobs()) == 1
