"""The HTTP callback receiver: an ASGI app (Starlette) for the external side of callbacks.

``POST /callbacks/{callback_id}/{action}`` with a JSON object body:

==============  ====================================  =========================================
action          body                                  effect
==============  ====================================  =========================================
``complete``    ``{"payload": <any JSON>}``            ``complete_external``: the job completes
``fail``        ``{"error": "<message>"}``             ``fail_external``: the job fails
``resume``      ``{"payload": <any JSON>}``            ``resume_external``: the handler resumes
``heartbeat``   ``{"timeout": <seconds>}``             ``heartbeat_callback``: more time to answer
==============  ====================================  =========================================

Every key is optional; an empty body is ``{}``; an unknown key is a bad body (a misspelt
``paylod`` must not complete a job with no payload). Answers: ``200`` with the job's id and new
state; ``401`` not signed, badly signed or outside the replay window; ``404`` unknown, resolved
or stale callback id; ``400`` bad body; ``409`` the job's state refuses the action; ``413`` body
too large; ``503`` the database cannot be reached. Nothing changes unless the answer is ``200``.

Store calls are synchronous: they run in Starlette's thread pool.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from awa.domain import (
    AwaError,
    CallbackNotFound,
    CompleteCallback,
    DatabaseError,
    FailCallback,
    IllegalTransition,
    Job,
    Resolution,
    ResumeCallback,
    SchemaNotMigrated,
    ValidationError,
)
from awa.http.signing import (
    ACTIONS,
    REPLAY_WINDOW_S,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    SignatureRejected,
    verify_request,
)

__all__ = ["BODY_SIZE_MAX", "CALLBACK_ID_LENGTH_MAX", "CallbackStore", "create_app"]

log = logging.getLogger("awa.http")

BODY_SIZE_MAX = 1024 * 1024
CALLBACK_ID_LENGTH_MAX = 256
ERROR_LENGTH_MAX = 10_000
DEFAULT_CALLBACK_TIMEOUT_S = 3600.0

_BODY_KEYS = {
    "complete": {"payload"},
    "fail": {"error"},
    "resume": {"payload"},
    "heartbeat": {"timeout"},
}


class CallbackStore(Protocol):
    """The two store verbs the receiver needs (every ``ClaimStore`` has them)."""

    def resolve_callback(self, callback_id: str, resolution: Resolution) -> Job: ...

    def heartbeat_callback(self, callback_id: str, *, timeout_s: float) -> Job: ...


class _BadBody(Exception):
    pass


class _TooLarge(Exception):
    pass


def _store_of(target: Any) -> CallbackStore:
    """An ``awa.Client``/``awa.AsyncClient`` gives its store; anything else is the store."""
    from awa.client import AsyncClient, Client

    if isinstance(target, (Client, AsyncClient)):
        store: CallbackStore = target.store
        return store
    for verb in ("resolve_callback", "heartbeat_callback"):
        if not callable(getattr(target, verb, None)):
            raise ValidationError(f"create_app needs a client or a store, got {target!r}")
    return target  # type: ignore[no-any-return]


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(action: str, body: bytes) -> dict[str, Any]:
    if not body.strip():
        return {}
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _BadBody(f"body is not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise _BadBody("body must be a JSON object")
    unknown = set(document) - _BODY_KEYS[action]
    if unknown:
        allowed = ", ".join(sorted(_BODY_KEYS[action]))
        raise _BadBody(f"unknown key(s) {', '.join(sorted(unknown))}; {action} takes: {allowed}")
    return document


def _operation(store: CallbackStore, action: str, callback_id: str, body: dict[str, Any]) -> Any:
    """The store call for ``action``, checked and ready to run in a thread."""
    if action == "heartbeat":
        timeout = body.get("timeout", DEFAULT_CALLBACK_TIMEOUT_S)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise _BadBody("timeout must be a positive number of seconds")
        return lambda: store.heartbeat_callback(callback_id, timeout_s=float(timeout))
    resolution: Resolution
    if action == "fail":
        error = body.get("error", "failed by callback")
        if not isinstance(error, str) or not error.strip() or len(error) > ERROR_LENGTH_MAX:
            raise _BadBody(f"error must be a non-empty string of at most {ERROR_LENGTH_MAX}")
        resolution = FailCallback(error)
    elif action == "complete":
        resolution = CompleteCallback(body.get("payload"))
    else:
        resolution = ResumeCallback(body.get("payload"))
    return lambda: store.resolve_callback(callback_id, resolution)


def _answer(status: int, **content: Any) -> JSONResponse:
    return JSONResponse(content, status_code=status)


def create_app(
    client_or_store: Any,
    *,
    secret: bytes | None,
    allow_unsigned: bool = False,
    replay_window_s: float = REPLAY_WINDOW_S,
    body_size_max: int = BODY_SIZE_MAX,
    now: Callable[[], float] = time.time,
) -> Starlette:
    """The receiver for ``client_or_store`` (an ``awa.Client``, ``awa.AsyncClient`` or a
    store). Requests must be signed with ``secret`` (see ``awa.http.sign_request``) unless
    ``allow_unsigned`` is true; a request that carries a signature is always checked."""
    store = _store_of(client_or_store)
    if secret is not None and (not isinstance(secret, bytes) or not secret):
        raise ValidationError("the callback secret must be non-empty bytes")
    if secret is None and not allow_unsigned:
        raise ValidationError("give a secret, or allow_unsigned=True for a trusted network")
    if not (isinstance(replay_window_s, (int, float)) and 0 < replay_window_s <= 86400):
        raise ValidationError("replay_window_s must be from 0 to 86400 seconds")

    def authenticate(action: str, callback_id: str, request: Request, body: bytes) -> None:
        signed = SIGNATURE_HEADER in request.headers
        if not signed:
            if allow_unsigned:
                return
            raise SignatureRejected(f"unsigned request: sign it and send {SIGNATURE_HEADER}")
        if secret is None:  # allow_unsigned without a secret: nothing to check against
            return
        verify_request(
            secret,
            action=action,
            callback_id=callback_id,
            body=body,
            timestamp_header=request.headers.get(TIMESTAMP_HEADER),
            signature_header=request.headers.get(SIGNATURE_HEADER),
            now=now(),
            replay_window_s=replay_window_s,
        )

    def endpoint(action: str) -> Callable[[Request], Any]:
        async def handle(request: Request) -> JSONResponse:
            callback_id: str = request.path_params["callback_id"]
            try:
                body = await _read_body(request, body_size_max)
            except _TooLarge:
                return _answer(413, error=f"body larger than {body_size_max} bytes")
            except ClientDisconnect:
                return _answer(400, error="client disconnected")
            try:
                authenticate(action, callback_id, request, body)
            except SignatureRejected as exc:
                log.warning("callback %s %s refused: %s", callback_id[:64], action, exc)
                return _answer(401, error=str(exc))
            if not 0 < len(callback_id) <= CALLBACK_ID_LENGTH_MAX:
                return _answer(404, error="callback not found")
            try:
                job = await run_in_threadpool(
                    _operation(store, action, callback_id, _parse(action, body))
                )
            except _BadBody as exc:
                return _answer(400, error=str(exc))
            except CallbackNotFound:
                return _answer(404, error="callback not found (unknown, resolved, or stale)")
            except ValidationError as exc:
                return _answer(400, error=str(exc))
            except IllegalTransition as exc:
                return _answer(409, error=str(exc))
            except (DatabaseError, SchemaNotMigrated) as exc:
                log.error("callback %s %s: %s", callback_id, action, exc)
                return _answer(503, error="the job store is unavailable")
            except AwaError as exc:
                return _answer(400, error=str(exc))
            log.info("callback %s %s: job %s now %s", callback_id, action, job.id, job.state.value)
            return _answer(200, callback_id=callback_id, job_id=job.id, state=job.state.value)

        return handle

    routes = [
        Route(f"/callbacks/{{callback_id}}/{action}", endpoint(action), methods=["POST"])
        for action in ACTIONS
    ]
    return Starlette(routes=routes)
