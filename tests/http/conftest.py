"""PostgreSQL and real uvicorn servers on loopback for the callback receiver tests.

The server and ``create_database`` come from the shared plugin ``tests/pg_fixtures.py``.
``receiver`` runs a test once per store (memory, then PostgreSQL), each behind the same three
receivers; ``serving_command`` runs ``awa callbacks serve`` as a real process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import psycopg
import pytest
import uvicorn

from awa.adapters.memory import MemoryStore
from awa.adapters.postgres import PostgresStore, migrate
from awa.domain import Job, NewJob
from awa.http import callback_url, create_app, sign_request

SECRET = b"s3cret-for-tests"
START_TIMEOUT_S = 10.0
ROOT = Path(__file__).resolve().parents[2]


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


def post(
    base: str,
    callback_id: str,
    action: str,
    document: Any = None,
    *,
    body: bytes | None = None,
    secret: bytes | None = SECRET,
    timestamp: int | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    """POST ``document`` (or raw ``body``) to ``action``, signed with ``secret`` unless None."""
    raw = body if body is not None else json.dumps(document or {}).encode()
    sent = {"content-type": "application/json", **(headers or {})}
    if secret is not None:
        sent.update(sign_request(secret, callback_id, raw, timestamp, action=action))
    return httpx.post(callback_url(base, callback_id, action), content=raw, headers=sent)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving_command(
    *args: str,
    env: dict[str, str],
    command: tuple[str, ...] = ("callbacks", "serve"),
    stderr: list[str] | None = None,
) -> Iterator[str]:
    """``python -m awa callbacks serve ARGS --port P`` (or another serving ``command``) with
    ``env`` added to the environment, until its port accepts; yields its URL and stops it with
    SIGINT, then appends what it wrote to its stderr to ``stderr`` when given."""
    port = _free_port()
    environment = {**os.environ, **env}
    server = subprocess.Popen(
        [sys.executable, "-m", "awa", *command, *args, "--port", str(port)],
        env=environment,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 15
        while True:  # until the port accepts, with a bound
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, server.communicate()
                assert time.monotonic() < deadline, f"awa {' '.join(command)} did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.send_signal(signal.SIGINT)
        _, written = server.communicate(timeout=15)
        if stderr is not None:
            stderr.append(written)


def make_pending(store: Any) -> Job:
    """A running job with a pending callback, on a queue of its own, in ``store``."""
    queue = f"q{time.monotonic_ns()}"
    store.insert([NewJob(kind="charge_card", queue=queue)])
    [job] = store.claim(queue, limit=1)
    registered = store.register_callback(job.lease, timeout_s=600)
    return registered.job  # type: ignore[no-any-return]


@attrs.frozen
class Receiver:
    """One store behind three receivers: ``signed`` demands signatures made with ``SECRET``;
    ``trusting`` allows unsigned requests but has the secret; ``secretless`` allows unsigned
    requests and has no secret (``awa callbacks serve --allow-unsigned`` without one)."""

    name: str
    store: Any
    signed: str
    trusting: str
    secretless: str

    def pending(self) -> Job:
        return make_pending(self.store)


@contextmanager
def _receivers(name: str, store: Any) -> Iterator[Receiver]:
    with (
        serving(create_app(store, secret=SECRET)) as signed,
        serving(create_app(store, secret=SECRET, allow_unsigned=True)) as trusting,
        serving(create_app(store, secret=None, allow_unsigned=True)) as secretless,
    ):
        yield Receiver(name, store, signed, trusting, secretless)


@pytest.fixture(scope="session")
def memory_receiver() -> Iterator[Receiver]:
    with _receivers("memory", MemoryStore()) as receiver:
        yield receiver


@pytest.fixture(scope="session")
def postgres_receiver(store: PostgresStore) -> Iterator[Receiver]:
    with _receivers("postgres", store) as receiver:
        yield receiver


@pytest.fixture(params=["memory", "postgres"])
def receiver(request: pytest.FixtureRequest) -> Receiver:
    """The test runs once per store, against the same receivers."""
    found: Receiver = request.getfixturevalue(f"{request.param}_receiver")
    return found


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
    return lambda: make_pending(store)
