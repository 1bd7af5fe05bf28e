"""PostgreSQL and real uvicorn servers on loopback for the callback receiver tests.

The server and ``create_database`` come from the shared plugin ``tests/pg_fixtures.py``."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
import uvicorn

from awa.adapters.postgres import PostgresStore, migrate
from awa.domain import Job, NewJob
from awa.http import create_app

SECRET = b"s3cret-for-tests"
START_TIMEOUT_S = 10.0


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """Run ``app`` under uvicorn on 127.0.0.1 (a free port) in a thread; yields its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.started:  # a condition with a bound, not a fixed sleep
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=START_TIMEOUT_S)
        sock.close()


@pytest.fixture(scope="session")
def http_database(create_database: Callable[[], str]) -> str:
    url = create_database()
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
    return url


@pytest.fixture(scope="session")
def store(http_database: str) -> Iterator[PostgresStore]:
    """One store for the session: every test makes its own jobs, so none share state."""
    with PostgresStore(http_database, pool_size=20) as s:
        yield s


@pytest.fixture(scope="session")
def signed_server(store: PostgresStore) -> Iterator[str]:
    """A receiver that demands signatures made with ``SECRET``."""
    with serving(create_app(store, secret=SECRET)) as url:
        yield url


@pytest.fixture(scope="session")
def unsigned_server(store: PostgresStore) -> Iterator[str]:
    """A receiver for a trusted network: unsigned requests allowed, signed ones still checked."""
    with serving(create_app(store, secret=SECRET, allow_unsigned=True)) as url:
        yield url


@pytest.fixture
def pending(store: PostgresStore) -> Callable[[], Job]:
    """Makes a running job with a pending callback, on a queue of its own."""
    made = 0

    def make() -> Job:
        nonlocal made
        made += 1
        queue = f"q{time.monotonic_ns()}_{made}"
        store.insert([NewJob(kind="charge_card", queue=queue)])
        [job] = store.claim(queue, limit=1)
        registered = store.register_callback(job.lease, timeout_s=600)
        return registered.job  # type: ignore[union-attr, no-any-return]

    return make
