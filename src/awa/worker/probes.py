"""``/healthz`` and ``/readyz`` for an orchestrator's probes, served on the worker's own event
loop.

``GET /healthz`` answers 200 while the worker is alive (its scheduler runs) and 503 when it is
not; it never asks the database, so an outage does not get every worker restarted. ``GET
/readyz`` answers 200 when the worker is ready (started, not shutting down, its database
answering within ``READY_TIMEOUT_S``, its listener connected) and 503 otherwise. Both bodies
are JSON (``awa.runtime.health.Health.to_json``; ``/healthz`` only says ``alive``).

Two fixed routes over asyncio streams, not a web framework: the worker needs no HTTP stack for
them, and because they run on the worker's loop, a loop blocked by a handler fails the
liveness probe, which is the truth. So nothing a probe does may block the loop itself: the
readiness check asks the store on a thread of its own (``Readiness``), and a store that does
not answer makes ``/readyz`` say so, never ``/healthz`` wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from awa.client import AsyncClient
from awa.runtime.health import Health, check_health
from awa.worker.errors import WorkerError

__all__ = ["READY_TIMEOUT_S", "Readiness", "serve_probes"]

log = logging.getLogger("awa.worker")
T = TypeVar("T")

#: how long ``/readyz`` waits for the database before answering 503
READY_TIMEOUT_S = 5.0
#: a request is at most this long (request line and headers) and this slow to arrive
_REQUEST_BYTES_MAX = 8192
_READ_TIMEOUT_S = 5.0

_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}


def _on_own_thread(fn: Callable[[], T]) -> asyncio.Future[T]:
    """``fn()`` on a daemon thread of its own: a check stuck in the store holds no thread that
    other work needs (the loop's default executor is the handlers'), nor the process's exit."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[T] = loop.create_future()

    def deliver(outcome: Callable[[], None]) -> None:
        if not answer.done():
            outcome()

    def run() -> None:
        try:
            value = fn()
        except Exception as exc:
            outcome = functools.partial(answer.set_exception, exc)
        else:
            outcome = functools.partial(answer.set_result, value)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody asks
            loop.call_soon_threadsafe(deliver, outcome)

    threading.Thread(target=run, name="awa-readiness", daemon=True).start()
    return answer


class Readiness:
    """``/readyz``'s check: ``check_health`` with the store asked on a thread of its own,
    answered within ``timeout_s`` whatever the store does. One check runs at a time: requests
    that arrive while it runs share its answer, so a flood of probes starts no more threads
    and no more round trips to the database than one."""

    def __init__(self, client: AsyncClient, timeout_s: float = READY_TIMEOUT_S) -> None:
        self._client = client
        self.timeout_s = timeout_s
        self._running: asyncio.Future[Health] | None = None

    @property
    def checking(self) -> bool:
        """A check is running (requests now would share its answer)."""
        return self._running is not None

    async def answer(self) -> tuple[int, dict[str, Any]]:
        """The status and document ``/readyz`` answers with."""
        running = self._running
        if running is None:
            client = self._client
            running = asyncio.ensure_future(
                check_health(client.store, client.runtime, _on_own_thread)
            )
            running.add_done_callback(self._finished)
            self._running = running
        try:
            health = await asyncio.wait_for(asyncio.shield(running), self.timeout_s)
        except asyncio.TimeoutError:
            return 503, {"ready": False, "database_error": f"no answer within {self.timeout_s:g}s"}
        except Exception as exc:  # a store that failed in a way it does not translate: a bug
            return 503, {"ready": False, "database_error": f"{type(exc).__name__}: {exc}"}
        return (200 if health.ready else 503), health.to_json()

    def _finished(self, running: asyncio.Future[Health]) -> None:
        self._running = None
        if not running.cancelled() and running.exception() is not None:
            log.error("the readiness check failed", exc_info=running.exception())


async def _answer(
    client: AsyncClient, readiness: Readiness, method: str, path: str
) -> tuple[int, dict[str, Any]]:
    if path not in ("/healthz", "/readyz"):
        return 404, {"error": "not found: try /healthz or /readyz"}
    if method not in ("GET", "HEAD"):
        return 405, {"error": "use GET"}
    if path == "/healthz":
        runtime = client.runtime
        alive = runtime is None or runtime.scheduler_alive
        return (200 if alive else 503), {"alive": alive}
    return await readiness.answer()


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str]:
    """The method and path of a request; its headers are read and ignored."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT_S)
    words = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    if len(words) != 3:
        raise ValueError("not an HTTP request line")
    return words[0].upper(), words[1].split("?", 1)[0]


async def serve_probes(client: AsyncClient, host: str, port: int) -> asyncio.Server:
    """Start answering probes on ``host:port``; close the returned server to stop."""
    readiness = Readiness(client)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                method, path = await _read_request(reader)
            except (ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError):
                return  # not a request we can answer: close the connection
            status, document = await _answer(client, readiness, method, path)
            body = json.dumps(document).encode()
            writer.write(
                f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + (b"" if method == "HEAD" else body)
            )
            await writer.drain()
        except (ConnectionError, asyncio.LimitOverrunError):
            pass  # the prober went away, or sent too much: nothing to answer
        finally:
            writer.close()

    try:
        return await asyncio.start_server(handle, host, port, limit=_REQUEST_BYTES_MAX)
    except OSError as exc:
        raise WorkerError(f"cannot serve health on {host}:{port}: {exc.strerror or exc}") from None
