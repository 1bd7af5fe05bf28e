"""Argument checks every store adapter makes before touching its storage, with one message
each, so the adapters refuse bad input in the same words."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from awa.domain import ValidationError
from awa.domain.validation import check_flag, check_json_object, check_kind, check_queue
from awa.ports.results import Finish, Heartbeat
from awa.ports.store import BATCH_SIZE_MAX

__all__ = [
    "check_batch",
    "check_dlq_filter",
    "check_finishes",
    "check_heartbeats",
    "check_job_id",
    "check_limit",
]

T = TypeVar("T")


def check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= BATCH_SIZE_MAX:
        raise ValidationError(f"limit must be an integer from 1 to {BATCH_SIZE_MAX}, got {limit!r}")
    return limit


def check_batch(items: Sequence[T], what: str, kind: type[object]) -> Sequence[T]:
    if len(items) > BATCH_SIZE_MAX:
        raise ValidationError(f"at most {BATCH_SIZE_MAX} {what} per call, got {len(items)}")
    for item in items:
        if not isinstance(item, kind):
            raise ValidationError(f"expected {kind.__name__} values, got {type(item).__name__}")
    return items


def check_job_id(job_id: object) -> int:
    if isinstance(job_id, bool) or not isinstance(job_id, int):
        raise ValidationError(f"a job id is an integer, got {job_id!r}")
    return job_id


def check_dlq_filter(queue: str | None, kind: str | None, all: bool) -> None:
    """Bulk dead-letter commands act on a queue, a kind, or (only when asked) everything."""
    check_flag("all", all)
    if queue is not None:
        check_queue(queue)
    if kind is not None:
        check_kind(kind)
    if queue is None and kind is None and not all:
        raise ValidationError(
            "refusing to act on every dead-letter entry: give a queue or kind, or all=True"
        )


def _check_buffers(items: Sequence[Heartbeat] | Sequence[Finish]) -> None:
    for item in items:
        if item.progress is not None:
            check_json_object("progress", item.progress)
        if item.metadata is not None:
            check_json_object("metadata", item.metadata)


def check_heartbeats(beats: Sequence[Heartbeat]) -> Sequence[Heartbeat]:
    """Every beat, before any is written: a bad one refuses the whole call."""
    check_batch(beats, "heartbeats", Heartbeat)
    _check_buffers(beats)
    return beats


def check_finishes(finishes: Sequence[Finish]) -> Sequence[Finish]:
    """Every finish, before any is written: a bad one refuses the whole call, and the runtime
    splits the batch to find it (an outcome validates itself when it is made)."""
    check_batch(finishes, "finishes", Finish)
    _check_buffers(finishes)
    return finishes
