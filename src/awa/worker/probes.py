"""``/healthz`` and ``/readyz`` for an orchestrator's probes, served on the worker's own event
loop.

``GET /healthz`` answers 200 while the worker is alive (its scheduler runs) and 503 when it is
not; it never asks the database, so an outage does not get every worker restarted. ``GET
/readyz`` answers 200 when the worker is ready (started, not shutting down, its database
answering within ``READY_TIMEOUT_S``, its listener connected) and 503 otherwise. Both bodies
are JSON (``awa.runtime.health.Health.to_json``; ``/healthz`` only says ``alive``).

Two fixed routes over asyncio streams, not a web framework: the worker needs no HTTP stack for
them, and because they run on the worker's loop, a loop blocked by a handler fails the
liveness probe, which is the truth.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from awa.client import AsyncClient
from awa.worker.errors import WorkerError

__all__ = ["READY_TIMEOUT_S", "serve_probes"]

#: how long ``/readyz`` waits for the database before answering 503
READY_TIMEOUT_S = 5.0
#: a request is at most this long (request line and headers) and this slow to arrive
_REQUEST_BYTES_MAX = 8192
_READ_TIMEOUT_S = 5.0

_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"}


async def _answer(client: AsyncClient, method: str, path: str) -> tuple[int, dict[str, Any]]:
    if path not in ("/healthz", "/readyz"):
        return 404, {"error": "not found: try /healthz or /readyz"}
    if method not in ("GET", "HEAD"):
        return 405, {"error": "use GET"}
    runtime = client.runtime
    if path == "/healthz":
        alive = runtime is None or runtime.scheduler_alive
        return (200 if alive else 503), {"alive": alive}
    try:
        health = await asyncio.wait_for(client.health_check(), READY_TIMEOUT_S)
    except asyncio.TimeoutError:
        return 503, {"ready": False, "database_error": f"no answer within {READY_TIMEOUT_S:g}s"}
    return (200 if health.ready else 503), health.to_json()


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str]:
    """The method and path of a request; its headers are read and ignored."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT_S)
    words = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    if len(words) != 3:
        raise ValueError("not an HTTP request line")
    return words[0].upper(), words[1].split("?", 1)[0]


async def serve_probes(client: AsyncClient, host: str, port: int) -> asyncio.Server:
    """Start answering probes on ``host:port``; close the returned server to stop."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                method, path = await _read_request(reader)
            except (ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError):
                return  # not a request we can answer: close the connection
            status, document = await _answer(client, method, path)
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
