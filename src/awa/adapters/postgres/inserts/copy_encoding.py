"""New jobs as the rows of ``copy_jobs.sql`` in COPY's text format, a chunk at a time.

Each chunk's text is made while PostgreSQL reads the last (a streamed batch's chunks are made,
and validated, only when asked for), so the producer's work overlaps the database's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timezone

from awa.adapters.postgres._rows import stored_args, stored_json
from awa.adapters.postgres.inserts.chunks import more_than_counted, not_as_counted, unique_streamed
from awa.adapters.postgres.inserts.encoding import (
    is_plain,
    jobs_from_reserved,
    text_array,
    utc_job,
    woken_queues,
)
from awa.domain import Job, JobState, NewJob
from awa.domain.decisions import create_job, decided_alike

__all__ = ["COPY_CHUNK_JOBS", "copy_chunks", "copy_rows", "copy_text", "slices"]

_UTC = timezone.utc
#: jobs per COPY message: small enough to overlap making rows with PostgreSQL reading them
COPY_CHUNK_JOBS = 200
# COPY's text format: a backslash, tab, newline or carriage return inside a field is escaped
_COPY_SPECIAL = re.compile(r"[\\\t\n\r]")
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_NULL = "\\N"  # COPY's text for NULL
_NO_KEYS = f"\t{_NULL}\t{_NULL}"


def slices(jobs: Sequence[NewJob]) -> Iterator[Sequence[NewJob]]:
    """Jobs made already, as COPY messages."""
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
            raise more_than_counted(len(id_texts))
        if not is_plain(requests):
            raise unique_streamed()
        if make_jobs:
            created = jobs_from_reserved(requests, now, id_texts[start:end])
            yield created, woken_queues(created), copy_text(created, requests)
        else:
            text, woken = copy_rows(requests, now, id_texts[start:end])
            yield [], woken, text
        start = end
    if start != len(id_texts):
        raise not_as_counted(start, len(id_texts))


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
            f"{_json_field(stored_json(request.metadata))}{_keys(request)}\n"
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
            job = utc_job(create_job(request, job_id=int(job_id), now=now.astimezone(_UTC)))
            first = request
            head, tail = _shape_columns(job)
            if job.state is JobState.AVAILABLE:
                woken[job.queue] = None
        lines.append(
            f"{job_id}\t{head}{_json_field(stored_args(request))}\t{tail}"
            f"{_json_field(stored_json(request.metadata))}{_keys(request)}\n"
        )
    return "".join(lines), list(woken)


def _keys(request: NewJob) -> str:
    """The last two columns, ``concurrency_key`` and ``ordering_key``, each after a tab
    (``\\N``: NULL), escaped: a key may hold any character."""
    concurrency, ordering = request.concurrency_key, request.ordering_key
    if concurrency is None and ordering is None:
        return _NO_KEYS
    return (
        f"\t{_NULL if concurrency is None else _field(concurrency)}"
        f"\t{_NULL if ordering is None else _field(ordering)}"
    )


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
