"""Passwords out of anything awa shows: a database URL, or a driver's error that quotes it.

Used by the CLI for every line it prints and by the PostgreSQL adapter for every error it
raises. Pure and stdlib only: a URL that does not parse is exactly the one that leaks.

The URLs that leak are the malformed ones: libpq quotes back what it could not parse (all of
``user:pw@host/db`` with the scheme missing, or only ``"p w"`` when a password holds a space).
So the password is found the forgiving way, not by a URL parser: everything between the first
``:`` after the user name and the *last* ``@``; or a ``password=`` value (conninfo, query
string), quoted or bare. ``redact`` then replaces it wherever it appears, as written,
percent-decoded or unescaped, with ``***``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

__all__ = ["REDACTED", "redact", "redact_url"]

REDACTED = "***"

# scheme://user:password@ , the password running to the last "@" before another "://"
_USERINFO = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*):(?P<password>(?:(?!://)[^\n])*)@"
)
# password=value (libpq conninfo, a URL's query string, sslpassword=...), quoted or bare
_KEY_VALUE = re.compile(
    r"(?P<head>\b\w*password\s*=\s*)(?P<password>'(?:[^'\\\n]|\\.)*'?|[^\s&'\"]*)", re.IGNORECASE
)
# a backslash escape inside a quoted conninfo value: \' and \\
_CONNINFO_ESCAPE = re.compile(r"\\(.)")


def _passwords_of(url: str) -> set[str]:
    """Every password ``url`` holds, as written, percent-decoded and (a quoted conninfo value)
    unescaped; empty when none."""
    found: set[str] = set()
    rest = url.split("://", 1)[1] if "://" in url else url
    if "@" in rest:
        user_info = rest[: rest.rindex("@")]
        if ":" in user_info:
            found.add(user_info.split(":", 1)[1])
    for match in _KEY_VALUE.finditer(url):
        value = match.group("password")
        found.add(value)
        if value.startswith("'"):
            inner = value[1:-1] if len(value) > 1 and value.endswith("'") else value[1:]
            found |= {inner, _CONNINFO_ESCAPE.sub(r"\1", inner)}
    found |= {unquote(p) for p in found}
    return {p for p in found if p and p != REDACTED}


def redact(text: str, urls: Iterable[str | None] = ()) -> str:
    """``text`` without a password: those written in any URL or ``password=`` in it, and
    every password of ``urls`` (the URLs or connection strings the text may quote, whole or in
    part)."""
    text = _USERINFO.sub(lambda m: f"{m.group('head')}:{REDACTED}@", text)
    text = _KEY_VALUE.sub(lambda m: f"{m.group('head')}{REDACTED}", text)
    secrets: set[str] = set()
    for url in urls:
        if url:
            secrets |= _passwords_of(url)
    for secret in sorted(secrets, key=len, reverse=True):  # a longer one may contain a shorter
        text = text.replace(secret, REDACTED)
    return text


def redact_url(url: str) -> str:
    """``url`` with its password as ``***``: ``postgresql://app:***@db/app``."""
    return redact(url, [url])
