"""Stores by URL: ``open_store("postgresql://...")``.

A scheme names an opener: a function from the URL to a ``ClaimStore``. Openers import their
adapter only when called, so opening a PostgreSQL store never loads another adapter's driver
(and the client imports no adapter at all). A third-party adapter registers its own scheme.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

from awa.domain import ValidationError
from awa.ports import ClaimStore

__all__ = ["open_store", "register_scheme", "schemes"]

Opener = Callable[[str], ClaimStore]

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_lock = threading.Lock()
_openers: dict[str, Opener] = {}


def register_scheme(scheme: str, opener: Opener) -> None:
    """``open_store`` will open URLs starting with ``scheme:`` with ``opener``."""
    if not scheme or not scheme.replace("+", "").replace("-", "").isalnum():
        raise ValidationError(f"a URL scheme is letters, digits, '+' or '-', got {scheme!r}")
    with _lock:
        _openers[scheme.lower()] = opener


def schemes() -> list[str]:
    with _lock:
        return sorted(_openers)


def open_store(url: str) -> ClaimStore:
    """The store a URL names: ``postgresql://...`` (or ``postgres://``, or a libpq
    ``key=value`` connection string), ``sqlite:///jobs.db`` (``sqlite:////abs/jobs.db``,
    ``sqlite:///:memory:``), ``memory://``."""
    if not isinstance(url, str):
        raise ValidationError(f"a store URL is a string, got {type(url).__name__}")
    scheme = _scheme(url)
    if scheme is None:
        if "=" in url:  # host=... dbname=...: libpq's other way to name a PostgreSQL server
            scheme = "postgresql"
        else:  # no scheme, so no password in it to hide either
            raise ValidationError(
                f"a store URL starts with a scheme ({', '.join(schemes())}),"
                f" for example postgresql://host/db; got {url[:60]!r}"
            )
    with _lock:
        opener = _openers.get(scheme)
    if opener is None:
        raise ValidationError(
            f"no store for URLs starting {scheme + ':'!r}: use one of {', '.join(schemes())}"
        )
    return opener(url)


def _scheme(url: str) -> str | None:
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else None


def _postgres(url: str) -> ClaimStore:
    from awa.adapters.postgres import PostgresStore

    return PostgresStore(url)


def _memory(url: str) -> ClaimStore:
    from awa.adapters.memory import MemoryStore

    if url.rstrip("/").lower() != "memory:":
        raise ValidationError(f"an in-memory store takes no location: use 'memory://', got {url!r}")
    return MemoryStore()


def _sqlite(url: str) -> ClaimStore:
    from awa.adapters.sqlite import SqliteStore, sqlite_path

    return SqliteStore(sqlite_path(url))


for _name in ("postgresql", "postgres"):
    register_scheme(_name, _postgres)
register_scheme("memory", _memory)
register_scheme("sqlite", _sqlite)
