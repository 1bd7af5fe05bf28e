"""The operator verbs that are more than one store call, once for both front ends: each turns a
store's answer into the refusal an operator can act on, or counts what a bulk verb would
touch before it asks for a confirmation."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from awa.domain import IllegalTransition, Job, JobNotFound
from awa.operations.refusals import JobNotInDlq, NotCancellable
from awa.ports import BATCH_SIZE_MAX, ClaimStore

__all__ = ["cancel_job", "count_dead_letters", "not_dead_lettered", "retry_dead_letter"]


def cancel_job(cancel: Callable[[int], Job], job_id: int) -> Job:
    """``cancel(job_id)`` (the client's or the store's), a terminal job refused as
    ``NotCancellable``."""
    try:
        return cancel(job_id)
    except IllegalTransition as exc:
        raise NotCancellable(job_id, exc) from exc


def count_dead_letters(store: ClaimStore, queue: str | None, kind: str | None) -> str:
    """How many dead-letter entries match, for a confirmation question ("5000+" past the
    largest batch a store lists)."""
    found = len(store.list_job_summaries(home="dlq", queue=queue, kind=kind, limit=BATCH_SIZE_MAX))
    return f"{found}+" if found >= BATCH_SIZE_MAX else str(found)


def retry_dead_letter(store: ClaimStore, job_id: int, run_at: datetime | None = None) -> Job:
    """Row 20 for one job (at ``run_at`` when given); ``JobNotInDlq`` (saying where the job
    is) when it exists but is not dead-lettered, ``JobNotFound`` when it does not exist."""
    try:
        return store.retry_from_dlq(job_id, run_at=run_at)
    except JobNotFound:
        raise not_dead_lettered(store, job_id) from None


def not_dead_lettered(store: ClaimStore, job_id: int) -> JobNotInDlq:
    """The error for a job that is not in the dead-letter queue, saying where it is instead
    (raises ``JobNotFound`` when it is nowhere)."""
    elsewhere = store.get_job(job_id)
    return JobNotInDlq(
        f"job {job_id} is not in the dead-letter queue (it is {elsewhere.state.value});"
        f" `awa job retry {job_id}` retries failed and cancelled jobs"
    )
