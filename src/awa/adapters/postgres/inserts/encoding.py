"""New jobs as the insert statements' parameters, and the rows those statements answer as
``Job`` values: the encoding every route shares, apart from the routes (``router.py``).

Every insert statement takes the same columns, but each its own way: ``insert_job.sql`` one
value per column, ``insert_jobs.sql`` one array per column, ``insert_jobs_portable.sql`` one
JSON text for every driver. The COPY text is in ``copy_encoding.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

import attrs

from awa.adapters.postgres._rows import dump_json, stored_args, stored_json, unique_states_mask
from awa.domain import Job, JobState, NewJob
from awa.domain.decisions import create_job, create_jobs

__all__ = [
    "insert_params",
    "is_plain",
    "jobs_from_reserved",
    "one_row",
    "portable_insert_params",
    "single_job",
    "single_params",
    "text_array",
    "utc_job",
    "woken_queues",
]

_UTC = timezone.utc
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


def utc_job(job: Job) -> Job:
    """The adapter hands out UTC timestamps whatever zone the producer's ``run_at`` had."""
    if job.run_at.tzinfo is _UTC:
        return job
    return attrs.evolve(job, run_at=job.run_at.astimezone(_UTC))


def woken_queues(jobs: Sequence[Job]) -> list[str]:
    """Each queue that got an available job, once (``notify_wakeup.sql``)."""
    return list(dict.fromkeys(job.queue for job in jobs if job.state is JobState.AVAILABLE))


# -- one job: insert_job.sql ----------------------------------------------------------------------


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
        "concurrency_key": job.concurrency_key,
        "ordering_key": job.ordering_key,
    }


def single_job(job: NewJob, row: Sequence[Any]) -> Job:
    """The inserted job from ``insert_job.sql``'s row (id, created_at): the statement applied
    ``create_job``'s rule to that time, so applying it here gives the stored row."""
    return utc_job(create_job(job, job_id=row[0], now=row[1].astimezone(_UTC)))


# -- several jobs: reserve_job_ids.sql, then COPY --------------------------------------------


def jobs_from_reserved(jobs: Sequence[NewJob], now: datetime, ids: Sequence[str]) -> list[Job]:
    """Each new job as the domain creates it, with its id (as text, in order) and the time
    ``reserve_job_ids.sql`` returned."""
    created = create_jobs(jobs, job_ids=[int(job_id) for job_id in ids], now=now.astimezone(_UTC))
    return [utc_job(job) for job in created]


# -- jobs with unique keys: insert_jobs.sql, insert_jobs_portable.sql ----------------------------


def _unique_columns(jobs: Sequence[NewJob]) -> tuple[list[str | None], list[Any], list[Any]]:
    """Each job's unique digest, period and states mask (``None`` for a job without ``unique``)."""
    return (
        [j.unique_digest() for j in jobs],
        [j.unique.period if j.unique is not None else None for j in jobs],
        [unique_states_mask(j.unique.states) if j.unique is not None else None for j in jobs],
    )


def _may_repeat(digests: Sequence[str | None]) -> bool:
    """Whether two jobs share a digest: only then can they share a key (``insert_jobs.sql``)."""
    given = [d for d in digests if d is not None]
    return len(set(given)) < len(given)


def insert_params(jobs: Sequence[NewJob], now: datetime | None) -> dict[str, Any]:
    """Parameters of ``new_job_arrays.sqlpart`` (``insert_jobs.sql``, ``fire_schedule.sql``):
    one array per column. The unique key's period number is the statement's to add: it
    depends on ``now`` when a job has no ``run_at``."""
    digests, periods, states = _unique_columns(jobs)
    return {
        "now": now,
        "kind": [j.kind for j in jobs],
        "queue": [j.queue for j in jobs],
        "args": [stored_args(j) for j in jobs],
        "priority": [j.priority for j in jobs],
        "max_attempts": [j.max_attempts for j in jobs],
        "run_at": [j.run_at for j in jobs],
        "tags": [dump_json(list(j.tags)) for j in jobs],
        "metadata": [dump_json(j.metadata) for j in jobs],
        "unique_digest": digests,
        "may_repeat": _may_repeat(digests),
        "unique_period": periods,
        "unique_states": states,
        "concurrency_key": [j.concurrency_key for j in jobs],
        "ordering_key": [j.ordering_key for j in jobs],
    }


def portable_insert_params(
    jobs: Sequence[NewJob], now: datetime | None, *, skip_held: bool
) -> dict[str, Any]:
    """Parameters of ``insert_jobs_portable.sql``: text and booleans only, whatever the
    driver."""
    digests, periods, states = _unique_columns(jobs)
    rows = [
        {
            "kind": j.kind,
            "queue": j.queue,
            "args": j.args,
            "priority": j.priority,
            "max_attempts": j.max_attempts,
            "run_at": j.run_at.isoformat() if j.run_at is not None else None,
            "tags": list(j.tags),
            "metadata": j.metadata,
            "unique_digest": digest,
            "unique_period": period,
            "unique_states": mask,
            "concurrency_key": j.concurrency_key,
            "ordering_key": j.ordering_key,
        }
        for j, digest, period, mask in zip(jobs, digests, periods, states, strict=True)
    ]
    return {
        "jobs": dump_json(rows),
        "now": now.isoformat() if now is not None else None,
        "skip_held": skip_held,
        "may_repeat": _may_repeat(digests),
    }


def one_row(row: Any) -> Any:
    """The row of a statement that answers exactly one (``insert_job.sql``,
    ``reserve_job_ids.sql``)."""
    if row is None:
        raise AssertionError("the insert statement returned no row")
    return row
