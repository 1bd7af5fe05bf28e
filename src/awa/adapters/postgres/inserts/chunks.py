"""A batch handed over as chunks made only when asked for (``awa.ports.BulkInserts``): the
jobs its chunks make must be the jobs it counted, and a streamed one holds no unique key.

The COPY route checks each chunk as it comes (``copy_encoding.copy_chunks``); a route that
needs every job at once makes them all first (``made``), with the same refusals.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from awa.domain import NewJob, ValidationError
from awa.domain.validation import shown

__all__ = ["check_count", "made", "more_than_counted", "not_as_counted", "unique_streamed"]


def check_count(count: object) -> int:
    """How many jobs a batch's chunks make: a count (its bound is the insert's to check,
    once the jobs are made, as for any insert)."""
    if type(count) is not int or count < 0:  # not isinstance: a bool is no count
        raise ValidationError(f"a batch's count is a number of jobs, got {shown(count)}")
    return count


def more_than_counted(count: int) -> ValidationError:
    return ValidationError(f"the chunks made more than the {count} jobs counted")


def not_as_counted(made: int, count: int) -> ValidationError:
    return ValidationError(f"the chunks made {made} jobs, not the {count} counted")


def unique_streamed() -> ValidationError:
    """COPY cannot look for a key's holder."""
    return ValidationError("a streamed insert takes jobs without unique keys")


def made(count: int, chunks: Iterable[Sequence[NewJob]]) -> list[NewJob]:
    """Every job of ``chunks``, made now; refuses more or fewer than ``count``."""
    jobs: list[NewJob] = []
    for chunk in chunks:
        jobs += chunk
        if len(jobs) > count:
            raise more_than_counted(count)
    if len(jobs) != count:
        raise not_as_counted(len(jobs), count)
    return jobs
