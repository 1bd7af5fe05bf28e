"""A worker's ``/healthz`` and ``/readyz`` (``awa.worker.probes``) never wait on the store:
``/healthz`` answers while another connection holds SQLite's write lock and the worker's own
write waits for it, ``/readyz`` reads past that writer, a refused PostgreSQL port is named at
once, and a flood of ``/readyz`` shares one check that answers within its bound."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from psycopg.conninfo import conninfo_to_dict

import awa
from awa.adapters.memory import MemoryStore
from awa.adapters.postgres import PostgresStore
from awa.adapters.sqlite import SqliteStore
from awa.worker.probes import Readiness, serve_probes
from tests.processes import get
from tests.tcp_proxy import TcpProxy

from .conftest import idle_task, run, until


@dataclass
class Work:
    n: int


#: the probers: threads of their own, so that a blocked event loop shows as no answer, and
#: enough of them that requests waiting for an answer never hold up the next one
_PROBERS = ThreadPoolExecutor(32, thread_name_prefix="prober")


async def _get(port: int, path: str) -> tuple[int, dict[str, Any]]:
    url = f"http://127.0.0.1:{port}{path}"
    status, body = await asyncio.get_running_loop().run_in_executor(_PROBERS, get, url)
    return status, json.loads(body) if body else {}


async def _serve(client: awa.AsyncClient) -> tuple[asyncio.Server, int]:
    server = await serve_probes(client, "127.0.0.1", 0)
    return server, int(server.sockets[0].getsockname()[1])


class _WriteLockHolder:
    """Another connection that takes the file's write lock (``BEGIN IMMEDIATE``) and keeps it
    until told to let go."""

    def __init__(self, path: Path) -> None:
        self.held, self._release = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._hold, args=(path,), daemon=True)
        self.held_at = self.held_s = 0.0

    def _hold(self, path: Path) -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        self.held_at = time.monotonic()
        self.held.set()
        self._release.wait()
        conn.execute("COMMIT")
        self.held_s = time.monotonic() - self.held_at
        conn.close()

    def __enter__(self) -> _WriteLockHolder:
        self._thread.start()
        self.held.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._thread.join()


def _waits_for_the_file(store: SqliteStore) -> bool:
    """Whether a write of the store holds its lock now (it waits for the file's lock)."""
    free = store._lock.acquire(blocking=False)
    if free:
        store._lock.release()
    return not free


#: how long the other connection holds the write lock while the probes keep asking
HELD_S = 2.0


def test_probes_answer_while_another_connection_holds_the_sqlite_write_lock(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "jobs.db"

    async def story() -> None:
        store = SqliteStore(str(path), busy_timeout_s=60)
        client = awa.AsyncClient(store=store)
        idle_task(client, "q")
        await client.start([awa.QueueConfig(queue="q", concurrency=1, poll_interval_s=0.05)])
        server, port = await _serve(client)
        try:
            await until(lambda: client.runtime is not None and client.runtime.working)
            with _WriteLockHolder(path) as holder:
                # the worker's next claim takes the store's lock and waits for the file's
                await until(lambda: _waits_for_the_file(store))
                answers = []
                while len(answers) < 6 or time.monotonic() - holder.held_at < HELD_S:
                    answers.append(await _get(port, "/healthz"))
                    answers.append(await _get(port, "/readyz"))
                assert _waits_for_the_file(store)  # all of it while the write still waited
            print(f"write lock held {holder.held_s:.2f}s; {len(answers)} probes answered meanwhile")
            for status, document in answers:
                assert status == 200, document
                assert document["alive"] is True
            readyz = [document for _, document in answers if "ready" in document]
            assert all(d["ready"] and d["database"] for d in readyz)
        finally:
            server.close()
            await client.close()

    with caplog.at_level(logging.WARNING, logger="awa.runtime"):
        run(story)
    blocked = [r.getMessage() for r in caplog.records if "event loop has been blocked" in r.message]
    assert blocked == []


@pytest.mark.postgres
def test_readyz_names_a_refused_postgres_port_at_once(pg_url: str) -> None:
    params = conninfo_to_dict(pg_url)
    proxy = TcpProxy(str(params.get("host") or "127.0.0.1"), int(params.get("port") or 5432))

    async def story() -> None:
        store = PostgresStore(proxy.url(pg_url), pool_size=2)
        client = awa.AsyncClient(store=store)
        server, port = await _serve(client)
        try:
            await asyncio.to_thread(store.pool.wait)  # its connection is in the pool, idle
            for _ in range(2):
                status, document = await _get(port, "/readyz")
                assert document["database"] is True, document
            proxy.close()  # the server is gone: its port refuses, its connections are closed
            for _ in range(2):  # the pool's broken connection, then an empty pool
                started = time.monotonic()
                status, document = await _get(port, "/readyz")
                print(f"/readyz answered in {time.monotonic() - started:.3f}s: {document}")
                assert (status, document["database"]) == (503, False)
                error = document["database_error"]
                assert f"cannot connect to PostgreSQL at 127.0.0.1:{proxy.port}" in error
                assert "refused" in error.lower()
        finally:
            server.close()
            await client.close()

    try:
        run(story)
    finally:
        proxy.close()


class _StuckStore(MemoryStore):
    """A store whose ping waits until told to answer, counting the pings."""

    def __init__(self) -> None:
        super().__init__()
        self.pings = 0
        self.pinged, self.answer = threading.Event(), threading.Event()

    def ping(self) -> None:
        self.pings += 1
        self.pinged.set()
        self.answer.wait()

    @property
    def listening(self) -> bool:
        return True


def test_concurrent_readyz_requests_share_one_check_and_healthz_never_waits() -> None:
    async def story() -> None:
        store = _StuckStore()
        client = awa.AsyncClient(store=store)
        server, port = await _serve(client)
        try:
            asked = [asyncio.ensure_future(_get(port, "/readyz")) for _ in range(20)]
            await asyncio.get_running_loop().run_in_executor(_PROBERS, store.pinged.wait)
            assert await _get(port, "/healthz") == (200, {"alive": True})
            store.answer.set()
            answers = await asyncio.gather(*asked)
            assert store.pings == 1
            assert {status for status, _ in answers} == {503}  # no worker runs: not ready
            assert all(document["database"] is True for _, document in answers)
        finally:
            store.answer.set()
            server.close()

    run(story)


def test_a_check_that_outlives_its_bound_answers_503_and_the_next_one_starts_afresh() -> None:
    async def story() -> None:
        store = _StuckStore()
        readiness = Readiness(awa.AsyncClient(store=store), timeout_s=0.05)
        status, document = await readiness.answer()
        assert (status, document) == (503, {"ready": False, "database_error": ANSWER_WITHIN})
        store.answer.set()
        await until(lambda: not readiness.checking)
        status, document = await readiness.answer()
        assert (status, document["database"]) == (503, True)
        assert store.pings == 2

    run(story)


ANSWER_WITHIN = "no answer within 0.05s"
