"""CSRF protection for every state-changing request.

A page that has a form sets the ``awa_csrf`` cookie (random, HttpOnly, SameSite=Strict) and
puts ``form_token(cookie)``, an HMAC of the cookie under a secret of this app, in the form. A
``POST`` is accepted only when its form's token matches its cookie: another site can neither
read the cookie nor, without the secret, compute a token for a cookie it planted. A request
that says where it comes from (``Origin``, ``Sec-Fetch-Site``) must also come from this site.
Requests authenticated with an ``Authorization: Bearer`` header need no token (a browser never
adds that header by itself), which keeps the actions scriptable with ``curl``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping

__all__ = ["CSRF_COOKIE", "CSRF_FIELD", "Csrf", "CsrfRefused"]

CSRF_COOKIE = "awa_csrf"
CSRF_FIELD = "csrf"


class CsrfRefused(Exception):
    """The request may not change anything; ``str()`` says why (a 403)."""


class Csrf:
    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    @staticmethod
    def new_cookie() -> str:
        return secrets.token_hex(32)

    def form_token(self, cookie: str) -> str:
        return hmac.new(self._secret, cookie.encode("utf-8"), hashlib.sha256).hexdigest()

    def check(
        self,
        *,
        cookie: str | None,
        token: str | None,
        headers: Mapping[str, str],
    ) -> None:
        """Raise ``CsrfRefused`` unless the form's token belongs to the cookie and the browser
        does not say the request comes from another site."""
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            raise CsrfRefused("the request came from another site")
        if not cookie or not token:
            raise CsrfRefused("the form has expired: reload the page and try again")
        if not hmac.compare_digest(token.encode("utf-8"), self.form_token(cookie).encode()):
            raise CsrfRefused("the form has expired: reload the page and try again")
