"""A result psycopg could not load, loaded again with loaders that never raise.

psycopg loads a whole result when it is fetched, and one value it cannot load (a
``timestamptz`` outside Python's range, ``jsonb`` holding an integer of more digits than
Python reads) fails the fetch of every row. ``fetch_rows`` fetches the fast way and, only when
that fails, loads the same result again (it is already in memory: nothing is sent to the
server) with loaders that return each value they cannot load as a ``Raw``, for
``awa.adapters._unreadable.read_job`` to read column by column. The rows it returns are
``Reread`` tuples, so a reader knows to look for ``Raw`` values in them.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
from psycopg.adapt import AdaptersMap, Buffer, Loader, Transformer
from psycopg.types.datetime import TimestamptzLoader

from awa.adapters._unreadable import Raw

__all__ = ["Reread", "fetch_rows", "fetch_rows_async", "reread"]

#: what a failed fetch raises: psycopg's own error for a time, the JSON loader's for JSON
_CANNOT_LOAD = (psycopg.DataError, ValueError)


class Reread(tuple):  # type: ignore[type-arg]
    """A row loaded again after its result could not be loaded: a value in it may be a
    ``Raw``."""

    __slots__ = ()


def _text(data: Buffer) -> str:
    return bytes(data).decode("utf-8", "replace")


class _Time(TimestamptzLoader):
    def load(self, data: Buffer) -> Any:
        try:
            return super().load(data)
        except psycopg.DataError as error:
            return Raw(_text(data), str(error))


class _Json(Loader):
    def load(self, data: Buffer) -> Any:
        try:
            return json.loads(bytes(data))
        except ValueError as error:
            return Raw(_text(data), str(error))


class _Context:
    """What a ``Transformer`` reads its loaders from: the connection's, with ours on top."""

    def __init__(self, cur: Any) -> None:
        self.connection = cur.connection
        self.adapters = AdaptersMap(cur.adapters)
        self.adapters.register_loader("timestamptz", _Time)
        self.adapters.register_loader("jsonb", _Json)
        self.adapters.register_loader("json", _Json)


def reread(cur: Any) -> list[Any]:
    """Every row of ``cur``'s current result, a value that cannot be loaded as a ``Raw``."""
    result = cur.pgresult
    if result is None:
        return []
    transformer = Transformer(_Context(cur))
    transformer.set_pgresult(result)
    return transformer.load_rows(0, result.ntuples, Reread)


def fetch_rows(cur: Any) -> list[Any]:
    """``cur.fetchall()``; when a value cannot be loaded, ``reread``."""
    try:
        rows: list[Any] = cur.fetchall()
    except _CANNOT_LOAD:
        return reread(cur)
    return rows


async def fetch_rows_async(cur: Any) -> list[Any]:
    """``fetch_rows`` for an async cursor."""
    try:
        rows: list[Any] = await cur.fetchall()
    except _CANNOT_LOAD:
        return reread(cur)
    return rows
