"""CSRF protection for every state-changing request.

A page that has a form sets the ``awa_csrf`` cookie (random, HttpOnly, SameSite=Lax) and puts
``form_token(cookie, session)`` in the form: an HMAC, under a secret of this app, of the cookie
and of the browser's session cookie (none without a token). A ``POST`` is accepted only when
its form's token is the one of the cookies it arrives with. Another site can neither read the
cookies nor, without the secret, compute a token; and a pair it obtained for itself (the
sign-in page is open to anyone) and planted in a victim's browser from a sibling subdomain
does not fit the victim's session.

A ``POST`` must also come from this dashboard's own pages: its ``Origin`` (or, when a browser
sends none, its ``Referer``) must name the host and port the request was sent to (its ``Host``
header), and a browser's ``Sec-Fetch-Site`` must be ``same-origin``. A request naming neither
origin nor referrer (a script) is judged by its token alone. Requests authenticated with an
``Authorization: Bearer`` header need no token at all (a browser never adds that header by
itself), which keeps the actions scriptable with ``curl``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["CSRF_COOKIE", "CSRF_FIELD", "Csrf", "CsrfRefused", "from_this_site"]

CSRF_COOKIE = "awa_csrf"
CSRF_FIELD = "csrf"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_EXPIRED = "the form has expired: reload the page and try again"
_ELSEWHERE = (
    "the request came from another site: only this dashboard's own pages may change anything"
    " (behind a proxy, pass the browser's Host header through)"
)


class CsrfRefused(Exception):
    """The request may not change anything; ``str()`` says why (a 403)."""


def _site(scheme: str, netloc: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``netloc`` read as an address of ``scheme``, lower-case, the
    scheme's default port filled in; ``None`` when it is not an address."""
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname or parts.username is not None or parts.password is not None:
        return None
    return parts.hostname.rstrip("."), port if port is not None else _DEFAULT_PORTS[scheme]


def from_this_site(source: str, host_header: str) -> bool:
    """Whether ``source`` (an ``Origin``, or a ``Referer`` URL) names the host and port of
    ``host_header``, the address the browser sent the request to."""
    try:
        parts = urlsplit(source) if source.isascii() else None
    except ValueError:  # an unclosed "[" of an IPv6 address
        return False
    if parts is None or parts.scheme not in _DEFAULT_PORTS or not parts.netloc:
        return False
    given = _site(parts.scheme, parts.netloc)
    return given is not None and given == _site(parts.scheme, host_header)


class Csrf:
    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    @staticmethod
    def new_cookie() -> str:
        return secrets.token_hex(32)

    def form_token(self, cookie: str, session: str | None) -> str:
        """The token of a form for a browser holding these two cookies."""
        message = f"awa-ui-csrf\n{cookie}\n{session or ''}".encode("utf-8", "surrogateescape")
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def check(
        self,
        *,
        cookie: str | None,
        session: str | None,
        token: str | None,
        headers: Mapping[str, str],
    ) -> None:
        """Raise ``CsrfRefused`` unless the request comes from this dashboard's pages and its
        form's token belongs to its cookies."""
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            raise CsrfRefused(_ELSEWHERE)
        source = headers.get("origin", headers.get("referer"))
        if source is not None and not from_this_site(source, headers.get("host", "")):
            raise CsrfRefused(_ELSEWHERE)
        if not cookie or not token:
            raise CsrfRefused(_EXPIRED)
        expected = self.form_token(cookie, session).encode()
        if not hmac.compare_digest(token.encode("utf-8", "surrogateescape"), expected):
            raise CsrfRefused(_EXPIRED)
