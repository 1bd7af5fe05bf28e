"""Signed HTTP callbacks: the receiver (``create_app``, needs the ``http`` extra) and the
helpers for the code that hands callback URLs out (``sign_request``, ``callback_url``)."""

from typing import TYPE_CHECKING

from awa.http.signing import (
    ACTIONS,
    REPLAY_WINDOW_S,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    SignatureRejected,
    callback_url,
    sign_request,
    verify_request,
)

if TYPE_CHECKING:
    from awa.http.app import create_app

__all__ = [
    "ACTIONS",
    "REPLAY_WINDOW_S",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "SignatureRejected",
    "callback_url",
    "create_app",
    "sign_request",
    "verify_request",
]


def __getattr__(name: str) -> object:
    # Starlette is optional: importing the signing helpers must not need it
    if name == "create_app":
        from awa.http.app import create_app

        return create_app
    raise AttributeError(f"module 'awa.http' has no attribute {name!r}")
