"""``sqlite:`` URLs, written as SQLAlchemy writes them: ``sqlite:///jobs.db`` is a path
relative to the working directory, ``sqlite:////var/lib/app/jobs.db`` an absolute one (the
fourth slash starts the path), ``sqlite:///:memory:`` a throwaway database."""

from __future__ import annotations

from urllib.parse import unquote

from awa.domain import ValidationError

__all__ = ["sqlite_path"]

_PREFIX = "sqlite:///"


def sqlite_path(url: str) -> str:
    """The file a ``sqlite:///...`` URL names (percent-escapes decoded)."""
    if not url[: len(_PREFIX)].lower() == _PREFIX:
        raise ValidationError(
            f"a SQLite URL is sqlite:///relative/path.db, sqlite:////absolute/path.db or"
            f" sqlite:///:memory:; got {url[:60]!r}"
        )
    rest = url[len(_PREFIX) :]
    if "?" in rest or "#" in rest:
        raise ValidationError(f"a SQLite URL takes no options ('?' or '#'), got {url[:60]!r}")
    path = unquote(rest)
    if not path or path.endswith("/"):
        raise ValidationError(f"a SQLite URL names a file after 'sqlite:///', got {url[:60]!r}")
    return path
