"""What a store may do beyond the ``ClaimStore`` port, each declared as a Protocol.

The client and the runtime ask the store (``isinstance(store, Listens)``) instead of importing
an adapter or probing with ``getattr``; a store without a capability still works, with the
fallback named on each. The contract suite gates each capability's tests the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from awa.domain import Job, NewJob, OnConflict
from awa.ports.results import Event, UnhandledKind
from awa.ports.summary import ENDED_WINDOW_S, QueueSummary

__all__ = [
    "AsyncInserts",
    "BulkInserts",
    "Closes",
    "CountsHeldBack",
    "InsertsOnConnection",
    "Listens",
    "Migrates",
    "Probes",
    "StreamsInserts",
    "SummarizesQueues",
    "TracksWorkers",
]


@runtime_checkable
class Migrates(Protocol):
    """The store keeps a schema of its own (``awa migrate``). Without it: nothing to do."""

    def migrate(self) -> list[int]:
        """Bring the schema up to date; returns the versions applied."""
        ...


@runtime_checkable
class Closes(Protocol):
    """The store holds resources (connections, threads). Without it: nothing to release."""

    def close(self) -> None: ...


@runtime_checkable
class Listens(Protocol):
    """The store pushes hints. Without it: workers find new work, cancels and callback answers
    by polling (``poll_interval``, and the next heartbeat), which is always the source of
    truth anyway."""

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``listener`` (from any thread) with hints: jobs available on a queue, a cancel
        for a running attempt, a callback answered. Hints may be lost. Returns a function that
        unsubscribes."""
        ...


@runtime_checkable
class InsertsOnConnection(Protocol):
    """Inserts inside a transaction the caller holds (``client.insert(..., conn=...)``):
    commit makes the jobs visible, rollback makes them vanish. Without it: ``conn=`` is
    refused with ``ValidationError``."""

    def insert_on(
        self, conn: Any, jobs: Sequence[NewJob], *, on_conflict: OnConflict = "raise"
    ) -> list[Job]:
        """Insert on the caller's connection, in its open transaction, as ``insert`` does;
        refuses (with ``ValidationError``) a connection this store cannot write through."""
        ...

    async def insert_on_async(
        self, conn: Any, jobs: Sequence[NewJob], *, on_conflict: OnConflict = "raise"
    ) -> list[Job]:
        """``insert_on`` for a connection awaited on an event loop."""
        ...


@runtime_checkable
class BulkInserts(Protocol):
    """The client hands the store a whole batch and the store picks how to write it: all at
    once, or while the producer is still making it, a chunk at a time, so that making the next
    chunk overlaps the database taking in the last; from an event loop, without a thread.
    ``AsyncClient`` and ``Client`` use it when their store has it (PostgreSQL does). Without
    it: every job is made before the store is called, and ``AsyncClient`` calls ``insert`` in a
    thread.

    A batch is how many jobs it holds (``count``), an iterable of chunks that makes (and
    validates) each chunk only when asked for it, whether any of its jobs has a unique key
    (such a batch cannot be written while it is being made: its keys' holders are looked for
    first), ``on_conflict`` as ``insert`` takes it, and whether only the ids come back. All or
    nothing, as ``insert``: when making a chunk raises, that exception comes out and nothing is
    written; chunks that make more or fewer jobs than ``count`` are refused.

    ``AsyncInserts`` and ``StreamsInserts`` are older names of this capability; the methods
    after ``close_async`` are its older spellings, each a batch whose route the caller chose."""

    def insert_batch(
        self,
        count: int,
        chunks: Iterable[Sequence[NewJob]],
        *,
        unique: bool,
        on_conflict: OnConflict = "raise",
        ids: bool = False,
    ) -> list[Job] | list[int]:
        """Insert the ``count`` jobs ``chunks`` makes; returns them in order, as ``insert``
        does, or with ``ids`` only their ids (``insert_many(..., returning="ids")``), which
        spares the store the making of a ``Job`` value of each."""
        ...

    async def insert_batch_async(
        self,
        count: int,
        chunks: Iterable[Sequence[NewJob]],
        *,
        unique: bool,
        on_conflict: OnConflict = "raise",
        ids: bool = False,
    ) -> list[Job] | list[int]:
        """``insert_batch``, awaited on the caller's event loop (the chunks are made there)."""
        ...

    async def close_async(self) -> None:
        """Release what the awaited inserts opened on this event loop."""
        ...

    async def insert_async(
        self, jobs: Sequence[NewJob], *, on_conflict: OnConflict = "raise"
    ) -> list[Job]:
        """``insert``, awaited on the caller's event loop: a batch made already."""
        ...

    def insert_streamed(self, count: int, chunks: Iterable[Sequence[NewJob]]) -> list[Job]:
        """A batch of 2 to ``BATCH_SIZE_MAX`` jobs, none with a unique key, written while
        ``chunks`` makes it, whatever its size; returns the jobs in order, as ``insert``
        does."""
        ...

    def insert_streamed_ids(self, count: int, chunks: Iterable[Sequence[NewJob]]) -> list[int]:
        """``insert_streamed`` returning only the ids, in order."""
        ...

    async def insert_streamed_async(
        self, count: int, chunks: Iterable[Sequence[NewJob]]
    ) -> list[Job]:
        """``insert_streamed``, awaited on the caller's event loop (the chunks are made
        there)."""
        ...

    async def insert_streamed_ids_async(
        self, count: int, chunks: Iterable[Sequence[NewJob]]
    ) -> list[int]:
        """``insert_streamed_ids``, awaited on the caller's event loop."""
        ...


#: the older name of ``BulkInserts`` for inserting from an event loop without a thread
#: (``insert_async``, ``close_async``): the same capability
AsyncInserts = BulkInserts
#: the older name of ``BulkInserts`` for writing a batch while it is being made
#: (``insert_streamed`` and its twins): the same capability
StreamsInserts = BulkInserts


@runtime_checkable
class Probes(Protocol):
    """The store can say whether its database answers and whether its listener is connected
    (``client.health_check()``, a worker's ``/readyz``). Without it: the store lives in the
    process, so it always answers, and its hints cannot be lost."""

    def ping(self) -> None:
        """One bounded round trip to the database; ``DatabaseError`` saying why when it does
        not answer (or the schema is not migrated). It does not queue behind the store's own
        calls (a worker's ``/readyz`` asks while they run), and a database that refuses
        connections is said at once."""
        ...

    @property
    def listening(self) -> bool:
        """Whether the notification listener is connected now (``False`` when nobody
        subscribed, or while it reconnects); read at once, not behind a lock a call holds."""
        ...


@runtime_checkable
class TracksWorkers(Protocol):
    """The store keeps, per queue, which kinds its live workers handle, so an operator can
    see jobs that wait where no worker takes them (``awa queue stats``). Workers record
    themselves every maintenance interval; a record lapses ``ttl_s`` after its last renewal
    (a dead worker stops renewing). Without it: no such warning."""

    def record_worker(
        self, owner: str, kinds: Mapping[str, Sequence[str]], *, ttl_s: float
    ) -> None:
        """``owner`` works each queue of ``kinds`` with handlers for those kinds; replaces its
        earlier record, lapsing ``ttl_s`` from now."""
        ...

    def forget_worker(self, owner: str) -> None:
        """``owner`` stopped: its record goes at once."""
        ...

    def unhandled_kinds(self) -> list[UnhandledKind]:
        """Kinds runnable now on a queue where no live worker handles them, by queue and
        kind."""
        ...


@runtime_checkable
class SummarizesQueues(Protocol):
    """The store keeps a summary of its queues (``awa.ports.summary``), counted once per
    maintenance interval by the leader, so that readers (the dashboard, metrics) never count
    the job table themselves. Without it: readers call ``queue_stats()``, which counts on every
    call."""

    def summarize_queues(self, *, window_s: float = ENDED_WINDOW_S) -> QueueSummary:
        """Count every queue now and keep the counts as the summary (replacing the last one);
        ``window_s``: how far back to count the jobs that ended. Returns the new summary."""
        ...

    def queue_summary(self) -> QueueSummary | None:
        """The summary as last counted, with every queue's settings as they are now; ``None``
        when nothing has counted the queues yet."""
        ...


@runtime_checkable
class CountsHeldBack(Protocol):
    """The store counts the candidates its claims' flow limits held back (``awa.domain.flow``:
    one per candidate, under the first reason that held it), for ``awa.claims.throttled``.
    Without it: the metric stays empty."""

    def take_held_back(self) -> dict[str, dict[str, int]]:
        """The counts by queue and reason since the last call; the next call starts from
        zero."""
        ...
