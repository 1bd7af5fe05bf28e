"""Batched writes that one held row cannot hold back.

A batch of fenced writes (a process's heartbeats, a worker's finishes, the completion hot
path) first locks its rows with ``SKIP LOCKED`` and commits what it locked at once. A row
another session holds (a rescue or cancel in progress, or a connection abandoned mid-transaction
whose server session still holds its lock) is left out of that first pass, and its job's
requests are then written on their own, each job in its own transaction that waits for the row
(``FOR UPDATE``, as every write did before) for at most ``held_row_wait_s`` in all. Before,
one held row made every batch that included it wait out the statement timeout and fail, so the
worker's other finishes were never written and their jobs were rescued as stale.

What is decided does not change, only how rows are locked: a skipped row is told apart from a
stale lease by its job's committed ``run_lease`` (``lookup_leases.sql``). A ``run_lease`` never
goes down, so a job whose committed lease is still the requested one may be owned, whatever
its committed state, and only the transaction that waits for its row decides; any other
request owns nothing, and is ``Stale`` exactly as before. A held job not written within the
wait (or after the database failed) is not reported ``Stale``: the call raises
``PartlyWritten`` with every other request's result, and the caller writes it again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from psycopg import errors as pg_errors

from awa.domain import DatabaseError, JobState, Lease
from awa.ports import PartlyWritten, WriteResult

__all__ = ["HELD_ROW_WAIT_S_DEFAULT", "WriteOne", "held_requests", "write_held"]

#: how long, in all, a batched write waits for rows other sessions hold, once the rest of the
#: batch is written
HELD_ROW_WAIT_S_DEFAULT = 1.0
#: ``(request indexes of one job, seconds it may wait for the row) -> their results``: the
#: requests written in a transaction of their own that waits for the job's row
WriteOne = Callable[[list[int], float], Sequence[WriteResult]]
# the row stayed held for the whole wait: the lock timeout, or the statement timeout when that
# is the shorter
_WAIT_ENDED = (pg_errors.LockNotAvailable, pg_errors.QueryCanceled)


def held_requests(
    leases: Sequence[Lease],
    written: Sequence[bool],
    committed: Mapping[int, tuple[int, JobState]],
) -> list[int]:
    """Indexes of the requests the first pass did not write whose job's committed
    ``(run_lease, state)`` (``committed``, looked up after it) still has the requested lease:
    their rows may have been skipped because another session held them."""
    return [
        index
        for index, lease in enumerate(leases)
        if not written[index]
        and (current := committed.get(lease.job_id)) is not None
        and current[0] == lease.run_lease
    ]


def write_held(
    action: str,
    leases: Sequence[Lease],
    results: list[WriteResult | None],
    held: Sequence[int],
    write_one: WriteOne,
    wait_s: float,
) -> list[WriteResult]:
    """Fill ``results`` at the ``held`` indexes, one job at a time (``write_one``), all within
    ``wait_s``; the other results are the first pass's. Raises ``PartlyWritten`` when a job's
    row stayed held past the wait, or the database failed, with the results written."""
    for index in held:
        results[index] = None
    give_up = time.monotonic() + wait_s
    unwritten: list[int] = []  # job ids
    failure: DatabaseError | None = None
    for group in _by_job(held, leases):
        job_id = leases[group[0]].job_id
        left = give_up - time.monotonic()
        if failure is not None or left <= 0:
            unwritten.append(job_id)
            continue
        try:
            written = write_one(group, left)
        except DatabaseError as exc:
            unwritten.append(job_id)
            if not isinstance(exc.__cause__, _WAIT_ENDED):
                failure = exc  # not the row: the database; try no more
            continue
        for index, result in zip(group, written, strict=True):
            results[index] = result
    if unwritten:
        done = sum(result is not None for result in results)
        jobs = f"job{'s' if len(unwritten) > 1 else ''} {', '.join(map(str, unwritten))}"
        why = (
            str(failure)
            if failure is not None
            else f"another session held the row past held_row_wait_s ({wait_s:g}s)"
        )
        raise PartlyWritten(
            f"{action}: {done} of {len(results)} written; {jobs} not written: {why}", results
        ) from failure
    return [result for result in results if result is not None]


def _by_job(indexes: Sequence[int], leases: Sequence[Lease]) -> list[list[int]]:
    """``indexes`` grouped by job, in the order each job first appears (requests for one job
    are decided together, in request order, as the first pass would have)."""
    groups: dict[int, list[int]] = {}
    for index in indexes:
        groups.setdefault(leases[index].job_id, []).append(index)
    return list(groups.values())
