"""The producer verbs' keywords, written once for both clients.

``insert`` and ``insert_many`` here take what the clients' verbs of those names take, and
only make a ``Batch`` of it: the items, and how to insert them. ``calls.produces_async`` and
``calls.produces`` make each client's verb from them, with their signature (typed, and shown
by ``help()``), handing the batch to the client's ``_insert_batch``. A new insert option is a
field of ``InsertSpec`` and a keyword of ``insert`` here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar, cast, overload

import attrs

from awa.client.requests import InsertSpec, Returning, returns_ids
from awa.domain import Job, OnConflict, Unique

__all__ = ["Batch", "Items", "insert", "insert_many"]

R = TypeVar("R")
#: what ``insert_many`` takes: args, or an ``InsertSpec`` with options
Items = Sequence[Any | InsertSpec]


@attrs.frozen
class Batch(Generic[R]):
    """The items of one insert call and how to insert them; ``R`` is what the verb answers
    (the job for ``insert``, the list of jobs or of ids for ``insert_many``)."""

    items: Items
    conn: Any
    on_conflict: OnConflict
    ids: bool
    one: bool = False  # ``insert``: the one job, not a list of it

    def answer(self, inserted: list[Job] | list[int]) -> R:
        return cast(R, inserted[0] if self.one else inserted)


def insert(
    args: Any,
    *,
    kind: str | None = None,
    queue: str | None = None,
    priority: int | None = None,
    max_attempts: int | None = None,
    run_at: datetime | None = None,
    tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
    unique: Unique | None = None,
    on_conflict: OnConflict = "raise",
    conn: Any = None,
    concurrency_key: str | bytes | None = None,
    ordering_key: str | bytes | None = None,
) -> Batch[Job]:
    spec = InsertSpec(
        args=args,
        kind=kind,
        queue=queue,
        priority=priority,
        max_attempts=max_attempts,
        run_at=run_at,
        tags=tags,
        metadata=metadata,
        unique=unique,
        concurrency_key=concurrency_key,
        ordering_key=ordering_key,
    )
    return Batch([spec], conn, on_conflict, ids=False, one=True)


@overload
def insert_many(
    items: Items,
    *,
    conn: Any = ...,
    on_conflict: OnConflict = ...,
    returning: Literal["jobs"] = ...,
) -> Batch[list[Job]]: ...
@overload
def insert_many(
    items: Items, *, conn: Any = ..., on_conflict: OnConflict = ..., returning: Literal["ids"]
) -> Batch[list[int]]: ...
def insert_many(
    items: Items,
    *,
    conn: Any = None,
    on_conflict: OnConflict = "raise",
    returning: Returning = "jobs",
) -> Batch[list[Job]] | Batch[list[int]]:
    return Batch(items, conn, on_conflict, ids=returns_ids(returning))
