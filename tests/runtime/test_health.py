"""``client.health_check()``: the database, the listener, each service's last good run, and the
slots in use; ``alive`` and ``ready`` as a worker's probes serve them."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass

import pytest

import awa
from awa.adapters.postgres import PostgresStore

from .conftest import Backend, run, until


@dataclass
class Work:
    n: int


def test_health_follows_a_worker_from_start_to_shutdown(backend: Backend) -> None:
    async def story() -> None:
        _, _, [client] = backend.clients()
        started, release = asyncio.Event(), asyncio.Event()

        @client.task(Work, queue="busy")
        async def handle(job: awa.Job[Work]) -> None:
            started.set()
            await release.wait()

        idle = await client.health_check()
        assert (idle.alive, idle.ready, idle.database, idle.working) == (True, False, True, False)
        assert (idle.listening, idle.services, idle.slots) == (None, {}, {})

        await client.insert(Work(1))
        await client.start([("busy", 3)])
        await started.wait()
        await until(lambda: client.runtime is not None and client.runtime.running("busy") == 1)

        async def claimed_once() -> bool:
            return (await client.health_check()).services.get("claim:busy") is not None

        await until(claimed_once)
        working = await client.health_check()
        assert (working.alive, working.ready, working.database) == (True, True, True)
        assert working.listening is True  # both stores push hints; PostgreSQL's is connected
        assert (working.slots["busy"].in_use, working.slots["busy"].concurrency) == (1, 3)
        assert set(working.services) >= {"claim:busy", "complete", "deadlines", "maintenance"}
        document = working.to_json()
        assert document["ready"] is True
        assert document["slots"] == {"busy": {"in_use": 1, "concurrency": 3}}

        release.set()
        await client.shutdown()
        stopped = await client.health_check()
        assert (stopped.ready, stopped.working, stopped.alive) == (False, False, True)

    run(story)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.postgres
def test_health_names_an_unreachable_database_and_is_not_ready() -> None:
    port = _closed_port()
    store = PostgresStore(f"postgresql://awa@127.0.0.1:{port}/awa", connect_timeout_s=2)
    try:
        client = awa.Client(store=store)
        health = client.health_check()
        assert (health.database, health.ready, health.alive) == (False, False, True)
        assert health.database_error is not None
        assert f"127.0.0.1:{port}" in health.database_error
        assert "\n" not in health.database_error
        client.close()
    finally:
        store.close()
