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

``400`` covers every value the request got wrong, whoever noticed: this module (not JSON, an
unknown key, nested deeper than a payload may be, a timeout that is not a number of seconds a
store can hold) or the domain and the store (``awa.ValidationError``: a NUL or an unpaired
surrogate in a payload or an error). A sender retries ``503`` and must not retry ``400``, so a
bad value never becomes a ``503`` or a ``500``. Every error body is one line of JSON,
``{"error": "..."}``, at most ``ERROR_BODY_CHARS_MAX`` characters of message.

Store calls are synchronous: they run in Starlette's thread pool.
"""

from __future__ import annotations

import json
import logging
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
from awa.domain.defaults import CALLBACK_TIMEOUT_S, FAILED_BY_CALLBACK
from awa.domain.validation import JSON_DEPTH_MAX, check_seconds
from awa.http.signing import (
    ACTIONS,
    REPLAY_WINDOW_S,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    SignatureRejected,
    verify_request,
)

__all__ = [
    "BODY_DEPTH_MAX",
    "BODY_SIZE_MAX",
    "CALLBACK_ID_LENGTH_MAX",
    "ERROR_BODY_CHARS_MAX",
    "CallbackStore",
    "create_app",
]

log = logging.getLogger("awa.http")

BODY_SIZE_MAX = 1024 * 1024
CALLBACK_ID_LENGTH_MAX = 256
ERROR_LENGTH_MAX = 10_000
#: how deep a body may nest: the body object, then a payload as deep as the domain allows
#: (``awa.domain.validation.JSON_DEPTH_MAX``); deeper is refused before the store is asked
BODY_DEPTH_MAX = JSON_DEPTH_MAX + 1
#: the longest message an error body carries (a refused value is quoted, not echoed whole)
ERROR_BODY_CHARS_MAX = 500

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
    if declared is not None and _is_ascii_digits(declared) and int(declared) > limit:
        raise _TooLarge
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _is_ascii_digits(text: str) -> bool:
    # str.isdigit() is true for "¹²³" (int() refuses it) and "٣" (int() reads it as 3)
    return text.isascii() and text.isdigit()


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _BadBody(f"body holds {text[:40]}, too large for a JSON number a store can hold")
    return value


def _no_constant(name: str) -> Any:
    raise _BadBody(f"body holds {name}, which is not JSON")


def _nested_deeper_than(document: Any, depth_max: int) -> bool:
    """Whether a value of ``document`` sits more than ``depth_max`` levels down (the document
    itself is level 0). A loop, not a recursion: the document is what may be too deep."""
    pending = [(document, 0)]
    while pending:
        value, depth = pending.pop()
        if depth > depth_max:
            return True
        if isinstance(value, dict):
            pending.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)
    return False


def _parse(action: str, body: bytes) -> dict[str, Any]:
    if not body.strip():
        return {}
    too_deep = f"body is nested deeper than {BODY_DEPTH_MAX} levels"
    try:
        document = json.loads(body, parse_float=_finite_float, parse_constant=_no_constant)
    except RecursionError:  # deeper than the parser goes: far deeper than allowed
        raise _BadBody(too_deep) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _BadBody(f"body is not JSON: {exc}") from None
    except ValueError:  # int() refuses a literal of more than sys.get_int_max_str_digits()
        raise _BadBody("body holds a number too long to read") from None
    if not isinstance(document, dict):
        raise _BadBody("body must be a JSON object")
    if _nested_deeper_than(document, BODY_DEPTH_MAX):
        raise _BadBody(too_deep)
    unknown = set(document) - _BODY_KEYS[action]
    if unknown:
        allowed = ", ".join(sorted(_BODY_KEYS[action]))
        raise _BadBody(f"unknown key(s) {', '.join(sorted(unknown))}; {action} takes: {allowed}")
    return document


def _operation(store: CallbackStore, action: str, callback_id: str, body: dict[str, Any]) -> Any:
    """The store call for ``action``, checked and ready to run in a thread."""
    if action == "heartbeat":
        try:  # the domain's bounds: finite, positive, and a deadline a store can hold
            timeout_s = check_seconds(
                "timeout", body.get("timeout", CALLBACK_TIMEOUT_S), allow_zero=False
            )
        except ValidationError as exc:
            raise _BadBody(str(exc)) from None
        return lambda: store.heartbeat_callback(callback_id, timeout_s=timeout_s)
    resolution: Resolution
    if action == "fail":
        error = body.get("error", FAILED_BY_CALLBACK)
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


def _refusal(status: int, message: str) -> JSONResponse:
    """``{"error": message}``, the message on one line and cut short."""
    line = " ".join(message.split())
    if len(line) > ERROR_BODY_CHARS_MAX:
        line = line[: ERROR_BODY_CHARS_MAX - 1] + "…"
    return _answer(status, error=line)


def _logged(callback_id: str) -> str:
    # a path segment is the sender's text: quoted and cut, so it cannot forge a log line
    return repr(callback_id[:64])


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
    ``allow_unsigned`` is true. A request that carries a signature is always checked, and
    refused unless it verifies: with ``allow_unsigned`` and no secret, a signed request cannot
    be checked, so it is refused too (the sender believes it is signing; say it is not
    heard)."""
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
        if secret is None:  # allow_unsigned without a secret: nothing to check it against
            raise SignatureRejected(
                f"this receiver has no secret to check {SIGNATURE_HEADER}: send the request"
                " unsigned, or give the receiver the secret"
            )
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
                return _refusal(413, f"body larger than {body_size_max} bytes")
            except ClientDisconnect:
                return _refusal(400, "client disconnected")
            try:
                authenticate(action, callback_id, request, body)
            except SignatureRejected as exc:
                log.warning("callback %s %s refused: %s", _logged(callback_id), action, exc)
                return _refusal(401, str(exc))
            if not 0 < len(callback_id) <= CALLBACK_ID_LENGTH_MAX:
                return _refusal(404, "callback not found")
            try:
                job = await run_in_threadpool(
                    _operation(store, action, callback_id, _parse(action, body))
                )
            except _BadBody as exc:
                return _refusal(400, str(exc))
            except CallbackNotFound:
                return _refusal(404, "callback not found (unknown, resolved, or stale)")
            except ValidationError as exc:  # the domain's or the store's refusal of a value
                return _refusal(400, str(exc))
            except IllegalTransition as exc:
                return _refusal(409, str(exc))
            except (DatabaseError, SchemaNotMigrated) as exc:
                log.error("callback %s %s: %s", _logged(callback_id), action, exc)
                return _refusal(503, "the job store is unavailable")
            except AwaError as exc:
                return _refusal(400, str(exc))
            log.info(
                "callback %s %s: job %s now %s",
                _logged(callback_id),
                action,
                job.id,
                job.state.value,
            )
            return _answer(200, callback_id=callback_id, job_id=job.id, state=job.state.value)

        return handle

    routes = [
        Route(f"/callbacks/{{callback_id}}/{action}", endpoint(action), methods=["POST"])
        for action in ACTIONS
    ]
    return Starlette(routes=routes)
