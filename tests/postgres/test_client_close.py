"""A client opened from a URL releases its connections, when closed or at the latest when the
interpreter exits; one handed a store leaves it open."""

import asyncio
import os
import subprocess
import sys
import time

import awa
from awa.adapters.postgres import PostgresStore, connections


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


NEVER_CLOSED = """
import atexit, sys

seen = {}
# atexit runs the last registered first: this runs after awa's own handler
atexit.register(lambda: print("closed at exit:", seen["store"].pool.closed, flush=True))

import awa

client = awa.Client(sys.argv[1])
client.insert({"n": 1}, kind="report")
seen["store"] = client.store
"""


def test_a_client_never_closed_closes_its_pool_when_the_interpreter_exits(
    pg_clean_url: str,
) -> None:
    """Left to psycopg_pool's ``__del__`` during finalization, Python 3.13 waited 5 s for each
    of the pool's threads: the script took 20 s to end, printing "couldn't stop thread"."""
    started = time.monotonic()
    ran = subprocess.run(
        [sys.executable, "-c", NEVER_CLOSED, pg_clean_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    took_s = time.monotonic() - started
    assert (ran.returncode, ran.stdout) == (0, "closed at exit: True\n"), ran.stderr
    assert "couldn't stop thread" not in ran.stderr
    assert took_s < 10


def test_a_forked_child_leaves_its_parents_pools_open_at_its_exit(pg_clean_url: str) -> None:
    """Their sockets are the parent's: closing them would end the parent's sessions."""
    with PostgresStore(pg_clean_url) as store:
        connections._OPEN_POOLS[store.pool] = os.getpid() + 1  # as a child sees its parent's
        connections._close_open_pools()
        assert not store.pool.closed
        connections._OPEN_POOLS[store.pool] = os.getpid()
        connections._close_open_pools()
        assert store.pool.closed
