"""Signed callback requests: HMAC-SHA256 over the action, the callback id, a timestamp and the
raw body. Pure functions; the code that hands callback URLs out and the receiver share them.

The signed message is ``b"v1\\n" + action + b"\\n" + callback_id + b"\\n" + timestamp + b"\\n" +
body``. The action is part of it so that a captured ``resume`` cannot be replayed as a
``complete`` (their bodies have the same shape). Headers:

* ``X-Awa-Timestamp``: Unix time in whole seconds;
* ``X-Awa-Signature``: ``v1=<hex digest>``; several comma-separated values are accepted, so a
  sender can sign with an old and a new secret while the secret rotates.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from urllib.parse import quote

from awa.domain import ValidationError

__all__ = [
    "ACTIONS",
    "REPLAY_WINDOW_S",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "SignatureRejected",
    "callback_url",
    "sign_request",
    "signature",
    "verify_request",
]

SIGNATURE_HEADER = "X-Awa-Signature"
TIMESTAMP_HEADER = "X-Awa-Timestamp"
#: how far a request's timestamp may be from the receiver's clock, either way
REPLAY_WINDOW_S = 300
#: what the receiver does with a callback, one route each
ACTIONS = ("complete", "fail", "resume", "heartbeat")
_SCHEME = "v1"
_SIGNATURES_MAX = 4  # bounded work per request, whatever the header holds


class SignatureRejected(Exception):
    """The request is not authentic, or not fresh; ``str()`` says which, for the 401 body."""


def _check_action(action: str) -> str:
    if action not in ACTIONS:
        raise ValidationError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
    return action


def _check_secret(secret: bytes) -> bytes:
    if not isinstance(secret, bytes) or not secret:
        raise ValidationError("the callback secret must be non-empty bytes")
    return secret


def signature(secret: bytes, action: str, callback_id: str, timestamp: str, body: bytes) -> str:
    """The hex HMAC-SHA256 of one request."""
    message = b"\n".join(
        [_SCHEME.encode(), action.encode(), callback_id.encode(), timestamp.encode(), body]
    )
    return hmac.new(_check_secret(secret), message, hashlib.sha256).hexdigest()


def sign_request(
    secret: bytes,
    callback_id: str,
    body: bytes,
    timestamp: int | None = None,
    *,
    action: str,
) -> dict[str, str]:
    """The headers that authenticate ``body`` sent to ``action`` for ``callback_id``.

    ``timestamp`` (Unix seconds) defaults to now; send the request within the receiver's
    replay window (five minutes by default)."""
    _check_action(action)
    stamp = str(int(time.time()) if timestamp is None else int(timestamp))
    digest = signature(secret, action, callback_id, stamp, body)
    return {TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: f"{_SCHEME}={digest}"}


def callback_url(base_url: str, callback_id: str, action: str) -> str:
    """Where the external system sends ``action`` for ``callback_id``, e.g.
    ``callback_url("https://jobs.example.com", token.callback_id, "complete")``."""
    _check_action(action)
    return f"{base_url.rstrip('/')}/callbacks/{quote(callback_id, safe='')}/{action}"


def verify_request(
    secret: bytes,
    *,
    action: str,
    callback_id: str,
    body: bytes,
    timestamp_header: str | None,
    signature_header: str | None,
    now: float,
    replay_window_s: float = REPLAY_WINDOW_S,
) -> None:
    """Raise ``SignatureRejected`` unless the headers sign this request and are fresh.

    Digests are compared with ``hmac.compare_digest`` (constant time)."""
    if not signature_header or timestamp_header is None:
        raise SignatureRejected(f"missing {SIGNATURE_HEADER} or {TIMESTAMP_HEADER} header")
    stamp = timestamp_header.strip()
    # ASCII digits only: "¹²³".isdigit() is true and int() refuses it
    if not (stamp.isascii() and stamp.isdigit()) or len(stamp) > 12:
        raise SignatureRejected(f"{TIMESTAMP_HEADER} must be Unix time in whole seconds")
    if abs(now - int(stamp)) > replay_window_s:
        raise SignatureRejected("timestamp outside the replay window")
    expected = signature(secret, action, callback_id, stamp, body)
    offered = [part.strip() for part in signature_header.split(",")][:_SIGNATURES_MAX]
    matched = False
    for item in offered:
        scheme, _, digest = item.partition("=")
        if scheme == _SCHEME and hmac.compare_digest(digest.encode(), expected.encode()):
            matched = True  # keep looping: the time taken does not say which one matched
    if not matched:
        raise SignatureRejected("signature does not match")
