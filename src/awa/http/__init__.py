"""Signed HTTP callbacks: the receiver (``create_app``, needs the ``http`` extra) and the
helpers for the code that hands callback URLs out (``sign_request``, ``callback_url``)."""

from typing import TYPE_CHECKING

from awa.http import signing
from awa.http.signing import *  # noqa: F403 (the signing helpers are the package's surface)

if TYPE_CHECKING:
    from awa.http.app import create_app

__all__ = ["create_app"]
__all__ += signing.__all__


def __getattr__(name: str) -> object:
    # Starlette is optional: importing the signing helpers must not need it
    if name == "create_app":
        from awa.http.app import create_app

        return create_app
    raise AttributeError(f"module 'awa.http' has no attribute {name!r}")
