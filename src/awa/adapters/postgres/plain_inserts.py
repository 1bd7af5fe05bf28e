"""Inserts of jobs without unique keys, the common case, on the shortest path PostgreSQL offers.

One job: one small prepared statement (``insert_job.sql``) that returns only the id and the
creation time. Several: ``reserve_job_ids.sql`` hands out the ids and the time,
``awa.domain.decisions.create_jobs`` decides every column from them, ``COPY`` writes the rows
straight into ``awa.jobs_hot`` (``copy_jobs.sql``) and ``notify_wakeup.sql`` wakes each queue that
got an available job once, all in one transaction: nothing comes back to decode, and PostgreSQL
inserts the copied rows a page at a time.

A streamed insert (``awa.ports.StreamsInserts``) takes the jobs as chunks the producer is still
making: it reserves the ids of all of them first, then makes and writes one chunk while
PostgreSQL reads the last, so the producer's validation overlaps the database's work too.

The jobs returned are the domain's own values, the same ones written, so they equal what a
read of the rows gives back. Jobs with unique keys take ``insert_jobs.sql``, which finds the
keys' holders in the same statement; COPY cannot.

Like ``enqueue.py``, nothing here ends a transaction it did not begin: on a connection already
in a transaction the rows join it; on an idle autocommit connection the bulk insert runs in a
transaction of its own (the single statement is one already).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from datetime import datetime, timezone
from typing import Any, TypeVar

import attrs
import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import tuple_row

from awa.adapters.postgres._rows import stored_args, stored_json
from awa.adapters.postgres._sql import SQL
from awa.domain import Job, JobState, NewJob, ValidationError
from awa.domain.decisions import create_job, create_jobs, decided_alike

__all__ = [
    "COPY_CHUNK_JOBS",
    "Streamer",
    "copy_chunks",
    "copy_rows",
    "copy_text",
    "insert_plain",
    "insert_plain_async",
    "insert_streamed",
    "insert_streamed_async",
    "insert_streamed_ids",
    "insert_streamed_ids_async",
    "is_plain",
    "jobs_from_reserved",
    "single_job",
    "single_params",
    "text_array",
]

_UTC = timezone.utc
T = TypeVar("T")
#: ``insert_streamed_async`` or ``insert_streamed_ids_async``
Streamer = Callable[
    [psycopg.AsyncConnection[Any], int, Iterable[Sequence[NewJob]], datetime | None],
    Awaitable[T],
]
#: jobs per COPY message: small enough to overlap making rows with PostgreSQL reading them
COPY_CHUNK_JOBS = 200
# COPY's text format: a backslash, tab, newline or carriage return inside a field is escaped
_COPY_SPECIAL = re.compile(r"[\\\t\n\r]")
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
# an element of an array literal is quoted; inside the quotes `"` and `\` are escaped
_ARRAY_SPECIAL = re.compile(r'["\\]')


def is_plain(jobs: Sequence[NewJob]) -> bool:
    """Whether no job has a unique key: only then may the insert skip the holder lookup."""
    return all(job.unique is None for job in jobs)


def text_array(items: Sequence[str]) -> str:
    """A ``text[]`` literal: every element double-quoted, so no character needs a rule."""
    if not items:
        return "{}"
    quoted = (_ARRAY_SPECIAL.sub(r"\\\g<0>", item) for item in items)
    return "{" + ",".join(f'"{item}"' for item in quoted) + "}"


def _utc(job: Job) -> Job:
    """The adapter hands out UTC timestamps whatever zone the producer's ``run_at`` had."""
    if job.run_at.tzinfo is _UTC:
        return job
    return attrs.evolve(job, run_at=job.run_at.astimezone(_UTC))


# -- one job ------------------------------------------------------------------------------------


def single_params(job: NewJob, now: datetime | None) -> dict[str, Any]:
    """Parameters of ``insert_job.sql``."""
    return {
        "now": now,
        "kind": job.kind,
        "queue": job.queue,
        "args": stored_args(job),
        "priority": job.priority,
        "max_attempts": job.max_attempts,
        "run_at": job.run_at,
        "tags": text_array(job.tags),
        "metadata": stored_json(job.metadata),
    }


def single_job(job: NewJob, row: Sequence[Any]) -> Job:
    """The inserted job from ``insert_job.sql``'s row (id, created_at): the statement applied
    ``create_job``'s rule to that time, so applying it here gives the stored row."""
    return _utc(create_job(job, job_id=row[0], now=row[1].astimezone(_UTC)))


# -- many jobs: COPY ----------------------------------------------------------------------------


def jobs_from_reserved(jobs: Sequence[NewJob], now: datetime, ids: Sequence[str]) -> list[Job]:
    """Each new job as the domain creates it, with its id (as text, in order) and the time
    ``reserve_job_ids.sql`` returned."""
    created = create_jobs(jobs, job_ids=[int(job_id) for job_id in ids], now=now.astimezone(_UTC))
    return [_utc(job) for job in created]


def _slices(jobs: Sequence[NewJob]) -> Iterator[Sequence[NewJob]]:
    for start in range(0, len(jobs), COPY_CHUNK_JOBS):
        yield jobs[start : start + COPY_CHUNK_JOBS]


def copy_chunks(
    chunks: Iterable[Sequence[NewJob]], now: datetime, ids: str, *, make_jobs: bool = True
) -> Iterator[tuple[list[Job], list[str], str]]:
    """A chunk of requests at a time, from the reservation's comma-separated ids: the jobs
    (``jobs_from_reserved``; none unless ``make_jobs``), the queues that got an available job,
    and the COPY text (``copy_text``, or ``copy_rows`` without jobs). PostgreSQL takes in one
    chunk while the next is made (a streamed insert's chunks are made, and validated, only
    when asked for), so the two cores share the work. Refuses a unique job (COPY cannot look
    for its key's holder), and more or fewer jobs than ids, before writing the chunk that
    shows it."""
    id_texts = ids.split(",")
    start = 0
    for requests in chunks:
        end = start + len(requests)
        if end > len(id_texts):
            raise ValidationError(f"the chunks made more than the {len(id_texts)} jobs counted")
        if not is_plain(requests):
            raise ValidationError("a streamed insert takes jobs without unique keys")
        if make_jobs:
            created = jobs_from_reserved(requests, now, id_texts[start:end])
            yield created, woken_queues(created), copy_text(created, requests)
        else:
            text, woken = copy_rows(requests, now, id_texts[start:end])
            yield [], woken, text
        start = end
    if start != len(id_texts):
        raise ValidationError(f"the chunks made {start} jobs, not the {len(id_texts)} counted")


def _field(text: str) -> str:
    return text.translate(_COPY_ESCAPES) if _COPY_SPECIAL.search(text) else text


def _json_field(text: str) -> str:
    """JSON text as a COPY field: ``json.dumps`` escapes every control character, so only a
    backslash needs COPY's escape."""
    return text.replace("\\", "\\\\") if "\\" in text else text


def copy_text(jobs: Sequence[Job], new: Sequence[NewJob]) -> str:
    """The rows of ``copy_jobs.sql`` in COPY's text format, one line per job, its columns in
    the statement's order; ``new`` holds each job's request (its args' JSON, made once).
    Kind and queue are names the domain allows only letters, digits and ``_.:-`` in."""
    lines = []
    shape: Job | None = None
    head = tail = ""
    for job, request in zip(jobs, new, strict=True):
        if shape is None or not _same_columns(job, shape):
            # a run of one shape (decisions.create_jobs) shares these columns' text
            shape = job
            head, tail = _shape_columns(job)
        lines.append(
            f"{job.id}\t{head}{_json_field(stored_args(request))}\t{tail}"
            f"{_json_field(stored_json(request.metadata))}\n"
        )
    return "".join(lines)


def copy_rows(new: Sequence[NewJob], now: datetime, ids: Sequence[str]) -> tuple[str, list[str]]:
    """``copy_text`` of new jobs without making a ``Job`` of each: the domain decides the
    first job of each run of one shape (``decided_alike``), whose columns but id, args and
    metadata every job of the run shares. Also the queues that got an available job."""
    lines = []
    woken: dict[str, None] = {}
    first: NewJob | None = None
    head = tail = ""
    for request, job_id in zip(new, ids, strict=True):
        if first is None or not decided_alike(request, first):
            job = _utc(create_job(request, job_id=int(job_id), now=now.astimezone(_UTC)))
            first = request
            head, tail = _shape_columns(job)
            if job.state is JobState.AVAILABLE:
                woken[job.queue] = None
        lines.append(
            f"{job_id}\t{head}{_json_field(stored_args(request))}\t{tail}"
            f"{_json_field(stored_json(request.metadata))}\n"
        )
    return "".join(lines), list(woken)


def _shape_columns(job: Job) -> tuple[str, str]:
    """The text of the columns before args and between args and metadata."""
    head = f"{job.kind}\t{job.queue}\t"
    tail = (
        f"{job.state.value}\t{job.priority}\t{job.attempt}\t{job.max_attempts}\t"
        f"{job.run_lease}\t{job.run_at.isoformat()}\t{job.created_at.isoformat()}\t"
        f"{_field(text_array(job.tags)) if job.tags else '{}'}\t"
    )
    return head, tail


def _same_columns(job: Job, shape: Job) -> bool:
    """Whether ``job``'s columns but id, args and metadata are ``shape``'s very objects."""
    return (
        job.kind is shape.kind
        and job.queue is shape.queue
        and job.state is shape.state
        and job.priority is shape.priority
        and job.attempt is shape.attempt
        and job.max_attempts is shape.max_attempts
        and job.run_lease is shape.run_lease
        and job.run_at is shape.run_at
        and job.created_at is shape.created_at
        and job.tags is shape.tags
    )


def woken_queues(jobs: Sequence[Job]) -> list[str]:
    """Each queue that got an available job, once (``notify_wakeup.sql``)."""
    return list(dict.fromkeys(job.queue for job in jobs if job.state is JobState.AVAILABLE))


def _tuple_cursor(conn: Any) -> Any:
    """A cursor whose rows are tuples (a caller's connection may make dicts); the store's
    connections already do, and a cursor made without a factory costs less."""
    return conn.cursor() if conn.row_factory is tuple_row else conn.cursor(row_factory=tuple_row)


def _idle_autocommit(conn: Any) -> bool:
    """Whether the bulk insert needs a transaction of its own: on an idle autocommit
    connection. Inside one the caller (or psycopg, off autocommit) began, it joins that."""
    return bool(conn.autocommit) and conn.info.transaction_status == TransactionStatus.IDLE


def _reserve(own: bool) -> str:
    # a transaction of our own begins in the same round trip as the reservation (a client-side
    # bound cursor sends both as one simple query), and ends with the wake-ups
    return f"BEGIN;\n{SQL['reserve_job_ids']}" if own else SQL["reserve_job_ids"]


def _wake_and_end(queues: list[str], own: bool) -> str | None:
    statements = [SQL["notify_wakeup"]] if queues else []
    return ";\n".join([*statements, "COMMIT"] if own else statements) or None


def _ended(conn: Any, own: bool) -> bool:
    """After a failure: whether the transaction of our own still needs its ROLLBACK."""
    status = conn.info.transaction_status
    return own and status in (TransactionStatus.INTRANS, TransactionStatus.INERROR)


def insert_plain(
    conn: psycopg.Connection[Any], jobs: Sequence[NewJob], now: datetime | None
) -> list[Job]:
    """Insert ``jobs`` (none with a unique key) on ``conn``; returns them with their ids, in
    order. ``now`` stands in for the database clock (``None``: ``now()``)."""
    if len(jobs) == 1:
        with _tuple_cursor(conn) as single:
            single.execute(SQL["insert_job"], single_params(jobs[0], now), prepare=True)
            return [single_job(jobs[0], _one(single.fetchone()))]
    return insert_streamed(conn, len(jobs), _slices(jobs), now)


def insert_streamed(
    conn: psycopg.Connection[Any],
    count: int,
    chunks: Iterable[Sequence[NewJob]],
    now: datetime | None,
) -> list[Job]:
    """Insert ``count`` jobs without unique keys, taken from ``chunks`` one chunk at a time,
    each made only once the last is on its way; all or none of them (an exception from
    ``chunks`` rolls back). On a connection in the caller's transaction, such an exception
    leaves that transaction failed: stream on a connection of your own."""
    return _streamed(conn, count, chunks, now, make_jobs=True)[0]


def insert_streamed_ids(
    conn: psycopg.Connection[Any],
    count: int,
    chunks: Iterable[Sequence[NewJob]],
    now: datetime | None,
) -> list[int]:
    """``insert_streamed`` returning only the ids, in order: no ``Job`` is made."""
    return _ids(_streamed(conn, count, chunks, now, make_jobs=False)[1])


def _ids(ids: str) -> list[int]:
    return [int(job_id) for job_id in ids.split(",")]


def _streamed(
    conn: psycopg.Connection[Any],
    count: int,
    chunks: Iterable[Sequence[NewJob]],
    now: datetime | None,
    *,
    make_jobs: bool,
) -> tuple[list[Job], str]:
    """The jobs written (none unless ``make_jobs``) and their ids as text."""
    own = _idle_autocommit(conn)
    with psycopg.ClientCursor(conn, row_factory=tuple_row) as cur:
        try:
            cur.execute(_reserve(own), {"now": now, "count": count})
            if own:
                cur.nextset()
            now, ids = _one(cur.fetchone())[:2]
            created: list[Job] = []
            woken: dict[str, None] = {}
            with cur.copy(SQL["copy_jobs"]) as copy:
                for chunk, queues, text in copy_chunks(chunks, now, ids, make_jobs=make_jobs):
                    created += chunk
                    woken.update(dict.fromkeys(queues))
                    copy.write(text)
            queues = list(woken)
            end = _wake_and_end(queues, own)
            if end is not None:
                cur.execute(end, {"queues": queues})
        except BaseException:
            if _ended(conn, own):
                with contextlib.suppress(Exception):
                    conn.execute("ROLLBACK")
            raise
    return created, ids


async def insert_plain_async(
    conn: psycopg.AsyncConnection[Any], jobs: Sequence[NewJob], now: datetime | None
) -> list[Job]:
    """``insert_plain`` on an ``AsyncConnection``."""
    if len(jobs) == 1:
        async with _tuple_cursor(conn) as single:
            await single.execute(SQL["insert_job"], single_params(jobs[0], now), prepare=True)
            return [single_job(jobs[0], _one(await single.fetchone()))]
    return await insert_streamed_async(conn, len(jobs), _slices(jobs), now)


async def insert_streamed_async(
    conn: psycopg.AsyncConnection[Any],
    count: int,
    chunks: Iterable[Sequence[NewJob]],
    now: datetime | None,
) -> list[Job]:
    """``insert_streamed`` on an ``AsyncConnection``."""
    return (await _streamed_async(conn, count, chunks, now, make_jobs=True))[0]


async def insert_streamed_ids_async(
    conn: psycopg.AsyncConnection[Any],
    count: int,
    chunks: Iterable[Sequence[NewJob]],
    now: datetime | None,
) -> list[int]:
    """``insert_streamed_ids`` on an ``AsyncConnection``."""
    return _ids((await _streamed_async(conn, count, chunks, now, make_jobs=False))[1])


async def _streamed_async(
    conn: psycopg.AsyncConnection[Any],
    count: int,
    chunks: Iterable[Sequence[NewJob]],
    now: datetime | None,
    *,
    make_jobs: bool,
) -> tuple[list[Job], str]:
    """``_streamed`` on an ``AsyncConnection``."""
    own = _idle_autocommit(conn)
    async with psycopg.AsyncClientCursor(conn, row_factory=tuple_row) as cur:
        try:
            await cur.execute(_reserve(own), {"now": now, "count": count})
            if own:
                cur.nextset()
            now, ids = _one(await cur.fetchone())[:2]
            created: list[Job] = []
            woken: dict[str, None] = {}
            async with cur.copy(SQL["copy_jobs"]) as copy:
                for chunk, queues, text in copy_chunks(chunks, now, ids, make_jobs=make_jobs):
                    created += chunk
                    woken.update(dict.fromkeys(queues))
                    await copy.write(text)
            queues = list(woken)
            end = _wake_and_end(queues, own)
            if end is not None:
                await cur.execute(end, {"queues": queues})
        except BaseException:
            if _ended(conn, own):
                with contextlib.suppress(Exception):
                    await conn.execute("ROLLBACK")
            raise
    return created, ids


def _one(row: Any) -> Any:
    if row is None:  # both statements return exactly one row
        raise AssertionError("the insert statement returned no row")
    return row
