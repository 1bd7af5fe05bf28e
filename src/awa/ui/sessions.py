"""The browser sessions of a dashboard with a token, kept by the dashboard itself.

Signing in at ``/login`` opens a session: a random id in the ``awa_session`` cookie, and here
a note of when it was opened (under the id's SHA-256, so what this process holds cannot be
replayed as a cookie). Signing out ends it at once, whoever still holds the cookie; otherwise
it lapses ``SESSION_MAX_AGE_S`` after it was opened. The notes live in this process: a restart
(or a new token, which needs one) signs every browser out, as it already voids the forms'
CSRF tokens. At most ``SESSIONS_MAX`` are open; signing in beyond that ends the oldest.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Callable

__all__ = ["SESSIONS_MAX", "SESSION_MAX_AGE_S", "Sessions"]

SESSION_MAX_AGE_S = 12 * 3600
SESSIONS_MAX = 1000
_ID_BYTES = 32
_ID_CHARS_MAX = 64  # token_urlsafe(32) is 43 characters; anything longer is not ours


def _key(session: str) -> bytes:
    return hashlib.sha256(session.encode("utf-8", "surrogateescape")).digest()


class Sessions:
    def __init__(self, now: Callable[[], float], *, max_age_s: float = SESSION_MAX_AGE_S) -> None:
        self._now = now
        self._max_age_s = max_age_s
        self._opened: dict[bytes, float] = {}  # in the order they were opened
        self._lock = threading.Lock()

    def open(self) -> str:
        """A new session's id, for the cookie."""
        session = secrets.token_urlsafe(_ID_BYTES)
        now = self._now()
        with self._lock:
            for key, opened in list(self._opened.items()):  # oldest first: stop at a live one
                if now - opened <= self._max_age_s:
                    break
                del self._opened[key]
            while len(self._opened) >= SESSIONS_MAX:
                del self._opened[next(iter(self._opened))]
            self._opened[_key(session)] = now
        return session

    def valid(self, session: str) -> bool:
        """Whether ``session`` is open: opened here, not ended, not lapsed."""
        if not session or len(session) > _ID_CHARS_MAX:
            return False
        with self._lock:
            opened = self._opened.get(_key(session))
        return opened is not None and 0 <= self._now() - opened <= self._max_age_s

    def end(self, session: str) -> None:
        """Sign ``session`` out: its cookie opens nothing any more."""
        with self._lock:
            self._opened.pop(_key(session), None)
