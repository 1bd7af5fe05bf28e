"""``PostgresStore``'s claim, routed once: a queue without flow limits is claimed in one
statement (``claim.sql``, ``claim_aged.sql``); a limited one in a transaction that holds the
queue's row lock while the domain decides (``awa.adapters.core.flow.within_limits``).

The one statement claims nothing on a limited queue (its guard reads the queue's row), so a
claim that took it by mistake is safe; when it claims nothing, ``queue_limited.sql`` says
whether the queue is limited, and the store remembers the queues it found so, whose next
claims go to the limited path at once. An unlimited queue with jobs therefore pays no round
trip for flow control, and an idle one pays one read per empty claim.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.rows import TupleRow

from awa.adapters.core.flow import HeldBackCounts, within_limits
from awa.adapters.postgres._rows import checked_rows, interval, job_from_row
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.transaction import PgTransaction, candidates_plan
from awa.domain import Job, decisions
from awa.domain.flow import FlowLimits

__all__ = ["PostgresClaims"]

Cursor = psycopg.Cursor[TupleRow]


class PostgresClaims(HeldBackCounts):
    """Mixed into ``PostgresStore``, whose statements and transactions these run in; counts
    what flow limits held back for ``awa.claims.throttled`` (``awa.ports.CountsHeldBack``)."""

    #: the queues this store last found limited (a stale entry costs one transaction, a
    #: missing one the read of queue_limited.sql: claim.sql's guard keeps both safe)
    _limited_queues: set[str]
    #: each limited queue's limits as its last claim read them: the window its next claim
    #: sends ahead of the lock's answer (a stale guess costs one more round trip)
    _flow_limits: dict[str, FlowLimits]

    if TYPE_CHECKING:

        def _statement(self, action: str) -> AbstractContextManager[Cursor]: ...

        def _connection(
            self, action: str
        ) -> AbstractContextManager[psycopg.Connection[TupleRow]]: ...

        def _transaction(self, action: str) -> AbstractContextManager[PgTransaction]: ...

        def _now(self) -> datetime | None: ...

    def _claim(
        self, queue: str, limit: int, deadline_duration_s: float, priority_aging_s: float
    ) -> list[Job]:
        if queue not in self._limited_queues:
            params = self._claim_params(queue, limit, deadline_duration_s, priority_aging_s)
            with self._statement("claiming jobs") as cur:
                jobs = _claimed(cur, params, priority_aging_s)
                if jobs:
                    return jobs
                row = cur.execute(SQL["queue_limited"], {"queue": queue}).fetchone()
            if not (row and row[0]):
                return []
            self._limited_queues.add(queue)
        return self._claim_limited(queue, limit, deadline_duration_s, priority_aging_s)

    def _claim_limited(
        self, queue: str, limit: int, deadline_duration_s: float, priority_aging_s: float
    ) -> list[Job]:
        """A claim under the queue's limits, in one transaction: its row locked
        (``lock_queue_flow.sql``), candidates locked and live attempts counted after the lock
        (the window ``candidates_plan`` names, and the key counts and buckets the limits
        need), the domain's decision, and the granted jobs claimed with the buckets and turn
        cursor written (``claim_granted.sql``). No advisory lock: the row lock ends with the
        transaction, however the claimer ends.

        The row lock serialises the fleet's claims of the queue, so what it spans is the
        fleet's bound: in pipeline mode the lock and the window the queue's last limits
        called for go in one round trip, and the claim and its COMMIT in another, so the lock
        is held across one wait of this process (for the domain's decision), not four."""
        last = self._flow_limits.get(queue)
        with (
            self._connection("claiming jobs of a limited queue") as conn,
            conn.pipeline() as pipeline,
        ):
            with conn.transaction(), conn.cursor() as cur:
                tx = PgTransaction(cur, self._now(), pipeline=pipeline)
                ahead = (
                    None if last is None else candidates_plan(last, queue, limit, priority_aging_s)
                )
                flow = tx.queue_flow(queue, ahead)
                if flow is None:  # no longer limited, or paused: the one statement decides
                    self._limited_queues.discard(queue)
                    self._flow_limits.pop(queue, None)
                    params = self._claim_params(queue, limit, deadline_duration_s, priority_aging_s)
                    return _claimed(cur, params, priority_aging_s, pipeline)
                self._flow_limits[queue] = flow.limits
                plan = candidates_plan(flow.limits, queue, limit, priority_aging_s)
                candidates, full_keys = tx.candidates(queue, plan)
                if full_keys:  # their jobs never reach the domain's decision to be counted
                    self._count_held_back(queue, {"key_concurrency": full_keys})
                if not candidates:
                    return []
                now = tx.now()
                _sort_claimed(candidates, now, priority_aging_s)
                granted = within_limits(
                    tx, queue, flow, candidates, limit, now, priority_aging_s, self._count_held_back
                )
                claiming = tx.send_claim_granted(queue, granted, interval(deadline_duration_s))
            claimed = claiming()  # read once COMMIT was sent behind it, in the same round trip
        _sort_claimed(claimed, now, priority_aging_s)
        return claimed

    def _claim_params(
        self, queue: str, limit: int, deadline_duration_s: float, priority_aging_s: float
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "now": self._now(),
            "queue": queue,
            "limit": limit,
            "deadline": interval(deadline_duration_s),
        }
        if priority_aging_s:
            params["aging_us"] = round(priority_aging_s * 1_000_000)
        return params


def _claimed(
    cur: Cursor,
    params: dict[str, Any],
    priority_aging_s: float,
    pipeline: psycopg.Pipeline | None = None,
) -> list[Job]:
    """``claim.sql`` (``claim_aged.sql`` when aging), its jobs in claim order."""
    cur.execute(SQL["claim_aged" if priority_aging_s else "claim"], params)
    if pipeline is not None:  # its answer, before checked_rows reads its columns
        pipeline.sync()
    jobs = [job_from_row(row) for row in checked_rows(cur)]
    if jobs:  # attempted_at is the claim's now: order them as the statement picked them
        _sort_claimed(jobs, jobs[0].attempted_at or jobs[0].run_at, priority_aging_s)
    return jobs


def _sort_claimed(jobs: list[Job], now: datetime, priority_aging_s: float) -> None:
    if priority_aging_s:
        jobs.sort(key=lambda job: decisions.claim_order(job, now, priority_aging_s))
    else:
        jobs.sort(key=decisions.PLAIN_CLAIM_ORDER)
