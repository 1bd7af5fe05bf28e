"""Who may use the dashboard: a token or basic-auth credentials, or, without either, only this
machine (loopback clients asking for a loopback host name).

* ``Access.token``: requests carry ``Authorization: Bearer <token>`` (scripts), or the session
  cookie that signing in at ``/login`` with the token sets (browsers): the id of a session this
  process keeps (``awa.ui.sessions``), which signing out ends and which lapses after
  ``SESSION_MAX_AGE_S``.
* ``Access.basic``: requests carry ``Authorization: Basic`` with the user name and password;
  the browser asks for them.
* Neither: a request is served only when it comes from a loopback address and names a loopback
  host (``127.0.0.1``, ``[::1]``, ``localhost``), which also shuts out a web page that rebinds
  its own host name to 127.0.0.1 (DNS rebinding), and only when it reached the dashboard
  directly: a request with a proxy's header (``PROXY_HEADERS``: ``Forwarded``, ``Via``,
  ``X-Forwarded-*``, ``X-Real-IP``, ...) came from wherever that proxy serves, not from this
  machine, even though its connection does. ``allow_unauthenticated`` lifts both for an app
  that authenticates in front of the dashboard.

Every secret is compared with ``hmac.compare_digest`` (constant time).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import time
from collections.abc import Callable, Iterable, Mapping

import attrs

from awa.domain import ValidationError
from awa.ui.sessions import SESSION_MAX_AGE_S, Sessions

__all__ = [
    "BASIC_AUTH_ENV",
    "PASSWORD_LENGTH_MIN",
    "PROXY_HEADERS",
    "SESSION_COOKIE",
    "SESSION_MAX_AGE_S",
    "TOKEN_ENV",
    "TOKEN_LENGTH_MIN",
    "Access",
    "Verdict",
    "is_loopback_host",
    "proxy_header",
]

TOKEN_ENV = "AWA_UI_TOKEN"
BASIC_AUTH_ENV = "AWA_UI_BASIC_AUTH"
TOKEN_LENGTH_MIN = 16
PASSWORD_LENGTH_MIN = 12
SESSION_COOKIE = "awa_session"
#: the headers a proxy adds to a request it passes on (any other ``X-Forwarded-`` one too)
PROXY_HEADERS = frozenset(
    {
        "forwarded",
        "via",
        "x-real-ip",
        "x-client-ip",
        "x-cluster-client-ip",
        "x-original-forwarded-for",
        "true-client-ip",
        "cf-connecting-ip",
        "fastly-client-ip",
    }
)
_PROXY_PREFIX = "x-forwarded-"


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (an address or a name, without port) is this machine."""
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def proxy_header(names: Iterable[str]) -> str | None:
    """The first of a request's header ``names`` that a proxy adds, if any."""
    for name in names:
        lowered = name.lower()
        if lowered in PROXY_HEADERS or lowered.startswith(_PROXY_PREFIX):
            return lowered
    return None


def _host_name(host_header: str) -> str:
    """The name part of a ``Host`` header (``[::1]:8000`` -> ``[::1]``)."""
    if host_header.startswith("["):
        return host_header.partition("]")[0] + "]"
    return host_header.rpartition(":")[0] if host_header.count(":") == 1 else host_header


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


@attrs.frozen
class Verdict:
    """``allowed``; ``bearer``: allowed by an ``Authorization: Bearer`` header, which a browser
    never sends on its own, so the request needs no CSRF token; ``reason`` when refused."""

    allowed: bool
    bearer: bool = False
    reason: str = ""


@attrs.frozen(kw_only=True)
class Access:
    token: str | None = None
    basic: tuple[str, str] | None = None
    allow_unauthenticated: bool = False
    now: Callable[[], float] = time.time
    sessions: Sessions = attrs.field(init=False, eq=False, repr=False)

    @sessions.default
    def _sessions(self) -> Sessions:
        return Sessions(self.now, max_age_s=SESSION_MAX_AGE_S)

    def __attrs_post_init__(self) -> None:
        if self.token is not None and self.basic is not None:
            raise ValidationError("give a token or basic-auth credentials, not both")
        if self.token is not None and (
            not isinstance(self.token, str) or len(self.token.strip()) < TOKEN_LENGTH_MIN
        ):
            raise ValidationError(
                f"the dashboard token must be at least {TOKEN_LENGTH_MIN} characters (make one"
                ' with: python -c "import secrets; print(secrets.token_urlsafe(32))")'
            )
        if self.basic is not None:
            user, password = self.basic
            if not user or ":" in user or len(password) < PASSWORD_LENGTH_MIN:
                raise ValidationError(
                    "basic-auth credentials are a user name without ':' and a password of at"
                    f" least {PASSWORD_LENGTH_MIN} characters"
                )

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Access:
        """``AWA_UI_TOKEN``, or ``AWA_UI_BASIC_AUTH`` as ``user:password``."""
        token = environ.get(TOKEN_ENV) or None
        basic_text = environ.get(BASIC_AUTH_ENV) or None
        basic = None
        if basic_text is not None:
            user, colon, password = basic_text.partition(":")
            if not colon:
                raise ValidationError(f"{BASIC_AUTH_ENV} must be user:password")
            basic = (user, password)
        return cls(token=token, basic=basic)

    @property
    def required(self) -> bool:
        """Whether requests must authenticate (a token or credentials are set)."""
        return self.token is not None or self.basic is not None

    # -- checking a request -----------------------------------------------------------------
    def check(
        self,
        *,
        client_host: str | None,
        host_header: str,
        authorization: str | None,
        session: str | None,
        proxied_by: str | None = None,
    ) -> Verdict:
        """``proxied_by``: the header that says a proxy passed the request on, if one does."""
        if not self.required:
            if self.allow_unauthenticated:
                return Verdict(True)
            if proxied_by is not None:
                return Verdict(
                    False,
                    reason=f"the request came through a proxy (it has a {proxied_by} header);"
                    " without a token the dashboard serves only browsers on this machine that"
                    " reach it directly: give it a token (AWA_UI_TOKEN for awa ui) to serve it"
                    " through a proxy",
                )
            if client_host is None or not is_loopback_host(client_host):
                return Verdict(False, reason="served to this machine only (no token is set)")
            if not is_loopback_host(_host_name(host_header)):
                return Verdict(False, reason="open the dashboard at 127.0.0.1 or localhost")
            return Verdict(True)
        scheme, _, credentials = (authorization or "").partition(" ")
        scheme = scheme.lower()
        if self.token is not None:
            if scheme == "bearer" and _same(credentials.strip(), self.token):
                return Verdict(True, bearer=True)
            if session is not None and self.session_valid(session):
                return Verdict(True)
            return Verdict(False, reason="sign in with the dashboard token")
        if scheme == "basic" and self._basic_matches(credentials.strip()):
            return Verdict(True)
        return Verdict(False, reason="basic-auth credentials required")

    def _basic_matches(self, encoded: str) -> bool:
        assert self.basic is not None
        try:
            decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return False
        user, _, password = decoded.partition(":")
        # both compared, always: the time taken does not say which one was wrong
        user_ok = _same(user, self.basic[0])
        password_ok = _same(password, self.basic[1])
        return user_ok and password_ok

    # -- the browser's session (token mode) ---------------------------------------------------
    def token_matches(self, given: str) -> bool:
        return self.token is not None and _same(given.strip(), self.token)

    def new_session(self) -> str:
        return self.sessions.open()

    def session_valid(self, value: str) -> bool:
        return self.sessions.valid(value)

    def end_session(self, value: str) -> None:
        self.sessions.end(value)
