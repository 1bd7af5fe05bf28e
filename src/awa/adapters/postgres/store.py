"""The PostgreSQL claim store: ``awa.ports.ClaimStore`` on psycopg 3.

The lifecycle is ``StoreCore``'s (argument checks, the fenced-write loop, every decision); this
module supplies its primitives in SQL. A fenced write runs in one transaction: one statement
locks the rows whose ``(id, run_lease)`` the caller still owns (the lease guard,
``lock_leases.sql``), the domain computes every new value with the transaction's ``now``, and
one batched statement writes them back (``transaction.PgTransaction``). The claim, insert,
promote and complete-many hot paths compute their single transition in SQL, with the same values
as the domain.

Every insert is routed by ``inserts/router.py``, mixed in (``InsertRouter``): the store hands it
``_insert`` and nothing else. The operators' primitives, one statement each, are
``operators.py``'s, mixed in the same way.

Time is the database's clock unless a clock is injected, whose time is then bound as a
parameter: worker hosts need not agree about the time, and tests expire leases without sleeping.
It is read when the statement takes effect (``clock_timestamp()`` once its rows are locked,
``time_after_locks.sqlpart``), never as ``now()``, the start of a transaction that may then have
waited seconds for a lock: a heartbeat, deadline or run_at stamped with that start would be
stale the moment it was written.
"""

from __future__ import annotations

import random
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Protocol

import psycopg
from psycopg.rows import TupleRow
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool

from awa.adapters._fencing import Decide, stale_results
from awa.adapters._presence import WorkerPresence
from awa.adapters._unreadable import Raw
from awa.adapters.core import StoreCore
from awa.adapters.postgres import migrations
from awa.adapters.postgres._errors import translate_errors
from awa.adapters.postgres._rereading import fetch_rows
from awa.adapters.postgres._rows import (
    checked_attempt_rows,
    checked_rows,
    dump_json,
    fast_json_loads,
    job_after_attempt,
    job_from_row,
    read_time,
    schedule_from_row,
    summary_from_row,
    utc,
)
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.claims import PostgresClaims
from awa.adapters.postgres.connections import (
    CALL_TIMEOUT_S_DEFAULT,
    CONNECT_TIMEOUT_S_DEFAULT,
    IDLE_IN_TRANSACTION_TIMEOUT_S_DEFAULT,
    RECONNECT_TIMEOUT_S,
    STATEMENT_TIMEOUT_S_DEFAULT,
    Bounds,
    PoolCalls,
    close_at_exit,
    connect_options,
    connector,
    reconnect_soon,
    session_options,
)
from awa.adapters.postgres.held_rows import HELD_ROW_WAIT_S_DEFAULT, held_requests, write_held
from awa.adapters.postgres.inserts.encoding import insert_params
from awa.adapters.postgres.inserts.loop_connection import LoopInserts
from awa.adapters.postgres.inserts.router import InsertRouter
from awa.adapters.postgres.listen import Subscriptions, pool_connector
from awa.adapters.postgres.operators import PostgresOperators
from awa.adapters.postgres.transaction import DLQ_PREFIX, PgTransaction, lease_states
from awa.domain import (
    Complete,
    FirePlan,
    Job,
    Lease,
    NewJob,
    OnConflict,
    ScheduleRecord,
    decisions,
)
from awa.domain.flow import FlowLimits
from awa.domain.retention import Retention
from awa.domain.validation import INSTANT_MIN, check_seconds
from awa.ports import (
    Applied,
    Clock,
    Event,
    Finish,
    UnhandledKind,
    WriteResult,
)
from awa.ports.checks import check_listener
from awa.ports.summary import ENDED_WINDOW_S, QueueSummary

__all__ = ["PostgresStore"]

Cursor = psycopg.Cursor[TupleRow]
Pool = ConnectionPool[psycopg.Connection[TupleRow]]
# the columns before the job in fire_schedule.sql rows: applied
_FIRE_PREFIX = 1
POOL_SIZE_DEFAULT = 10
#: the leadership name maintenance takes (a row of awa.leader)
MAINTENANCE_LEADERSHIP = "maintenance"
#: the queue summary counts a queue's finished jobs of one state exactly up to this many, and
#: estimates a larger group (count_finished_states.sql): its cost stays bounded however many
#: finished jobs retention keeps
FINISHED_EXACT_MAX = 50_000
#: each retention's delete, over the states awa.domain.retention gives it
#: (tests/contract/test_retention_sql.py)
_DELETE_STATEMENT = {Retention.COMPLETED: "delete_completed", Retention.FAILED: "delete_failed"}


class _Random(Protocol):
    def random(self) -> float: ...

    def getrandbits(self, k: int, /) -> int: ...


def _all_distinct_completions(finishes: Sequence[Finish]) -> bool:
    """A batch the hot path can take: only ``Complete``, each job once."""
    return all(isinstance(f.outcome, Complete) for f in finishes) and len(
        {f.lease.job_id for f in finishes}
    ) == len(finishes)


class PostgresStore(PostgresClaims, PostgresOperators, StoreCore, WorkerPresence, InsertRouter):
    """``ClaimStore`` on PostgreSQL.

    ``database`` is a connection string (the store then owns a pool of autocommit connections
    and closes it in ``close()``) or a ``psycopg_pool.ConnectionPool`` you own. ``clock``
    replaces the database clock (tests, simulation); ``rng`` is the backoff jitter's source and,
    when given, also makes callback ids reproducible (otherwise they are ``uuid4``).

    How long the store waits for its database (``connections.py``, ``docs/postgres.md``):
    ``connect_timeout_s`` bounds opening a connection, and an unreachable server is a
    ``DatabaseError`` naming host, port and reason on first use; ``statement_timeout_s`` is the
    server-side statement timeout of the store's own pool (``None``: the server's setting);
    ``call_timeout_s`` bounds, client-side, both the wait for a pooled connection and its use
    by one call, after which the connection is abandoned and replaced;
    ``idle_in_transaction_timeout_s`` has the server end a session of the store's own pool
    left idle inside a transaction (one its client abandoned), releasing its row locks
    (``None``: the server's setting).

    A batched write (heartbeats, finishes) skips a row another session holds, writes the rest
    at once, then waits for each held row on its own, ``held_row_wait_s`` at most in all
    (``held_rows.py``); a row still held then raises ``PartlyWritten`` with the other results.
    """

    def __init__(
        self,
        database: str | Pool,
        *,
        clock: Clock | None = None,
        rng: _Random | None = None,
        pool_size: int = POOL_SIZE_DEFAULT,
        connect_timeout_s: float = CONNECT_TIMEOUT_S_DEFAULT,
        statement_timeout_s: float | None = STATEMENT_TIMEOUT_S_DEFAULT,
        call_timeout_s: float = CALL_TIMEOUT_S_DEFAULT,
        idle_in_transaction_timeout_s: float | None = IDLE_IN_TRANSACTION_TIMEOUT_S_DEFAULT,
        held_row_wait_s: float = HELD_ROW_WAIT_S_DEFAULT,
    ) -> None:
        bounds = Bounds.checked(
            connect_timeout_s, statement_timeout_s, call_timeout_s, idle_in_transaction_timeout_s
        )
        self.held_row_wait_s = check_seconds("held_row_wait_s", held_row_wait_s, allow_zero=False)
        if isinstance(database, str):
            options = {"autocommit": True, "options": session_options(database, bounds)}
            self._pool: Pool = ConnectionPool(
                database,
                min_size=1,
                max_size=pool_size,
                kwargs=connect_options(database, options, bounds),
                open=False,
                name="awa",
                timeout=bounds.call_timeout_s,
                reconnect_timeout=RECONNECT_TIMEOUT_S,
                reconnect_failed=reconnect_soon,
            )
            self._owns_pool = True
            with translate_errors("opening the connection pool"):
                self._pool.open()
            close_at_exit(self._pool)
        else:
            self._pool = database
            self._owns_pool = False
        self.clock = clock
        self._seeded_rng = rng
        self.rng: _Random = rng if rng is not None else random.Random()
        self._schema_checked = False
        self._configured: weakref.WeakSet[psycopg.Connection[TupleRow]] = weakref.WeakSet()
        self._schema_lock = threading.Lock()
        self.bounds = bounds
        conninfo, kwargs = self._pool.conninfo, self._pool.kwargs
        self._calls = PoolCalls(
            self._pool,
            bounds,
            probe=connector(conninfo, kwargs, bounds),
            probe_first=self._owns_pool,
        )
        self._subscriptions = Subscriptions(pool_connector(conninfo, kwargs, bounds), bounds)
        self._loop_inserts = LoopInserts(self._pool, bounds)
        # the queues this store last found limited: their claims go to the limited path at
        # once (claim.sql's guard makes a stale entry safe either way)
        self._limited_queues: set[str] = set()
        self._flow_limits: dict[str, FlowLimits] = {}

    # -- plumbing -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop listening for notifications, and close the pool if this store opened it."""
        self._subscriptions.close()
        if self._owns_pool:
            self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pool(self) -> Pool:
        return self._pool

    def migrate(self) -> list[int]:
        """Bring the schema up to date (the ``awa migrate`` command); returns versions applied."""
        action = "migrating the awa schema"
        # unbounded: a migration may rewrite a large table; the server is still probed first
        with translate_errors(action), self._calls.connection(action, bounded=False) as conn:
            applied = migrations.migrate(conn)
        self._schema_checked = True
        return applied

    def _now(self) -> datetime | None:
        """The injected clock's time, bound into SQL; ``None`` lets SQL read the database's."""
        return self.clock.now() if self.clock is not None else None

    @contextmanager
    def _connection(self, action: str) -> Iterator[psycopg.Connection[TupleRow]]:
        with translate_errors(action), self._calls.connection(action) as conn:
            if conn not in self._configured:
                set_json_loads(fast_json_loads, conn)
                conn.execute(SQL["session_settings"])
                self._configured.add(conn)
            if not self._schema_checked:
                with self._schema_lock:
                    migrations.check_schema(conn)
                    self._schema_checked = True
            yield conn

    @contextmanager
    def _transaction(
        self, action: str, *, skip_held: bool = False, lock_wait_s: float | None = None
    ) -> Iterator[PgTransaction]:
        """``BEGIN ... COMMIT``. ``skip_held``: the lease guard skips rows other sessions hold
        (``lock_free_leases.sql``); ``lock_wait_s``: how long a lock may be waited for."""
        with self._connection(action) as conn, conn.transaction(), conn.cursor() as cur:
            if lock_wait_s is not None:
                wait = f"{max(1, round(lock_wait_s * 1000))}ms"
                cur.execute(SQL["set_lock_timeout"], {"lock_timeout": wait})
            yield PgTransaction(cur, self._now(), skip_held=skip_held)

    @contextmanager
    def _statement(self, action: str) -> Iterator[Cursor]:
        """For one statement: no explicit transaction (on autocommit connections, one round
        trip)."""
        with self._connection(action) as conn, conn.cursor() as cur:
            yield cur

    def _new_callback_id(self) -> str:
        if self._seeded_rng is not None:
            return str(uuid.UUID(int=self._seeded_rng.getrandbits(128), version=4))
        return str(uuid.uuid4())

    # -- the fast paths: StoreCore's insert, claim and promote, each as one statement ---------
    # (the memory and SQLite stores take the core's own, ``awa.adapters.core.row_paths``);
    # every insert's route is the router's (inserts/router.py), every claim's ``claims.py``
    def _insert(self, jobs: Sequence[NewJob], on_conflict: OnConflict) -> list[Job]:
        return self._insert_checked(jobs, on_conflict)

    def _promote(self, limit: int) -> list[Job]:
        with self._transaction("promoting jobs") as tx:
            tx.cur.execute(SQL["promote"], {"now": self._now(), "limit": limit})
            promoted = sorted(map(job_from_row, checked_rows(tx.cur)), key=_due_order)
            tx.wake(promoted)
            return promoted

    # -- workers ----------------------------------------------------------------------------------
    def _finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        if finishes and _all_distinct_completions(finishes):
            return self._complete_many(finishes)
        return super()._finish(finishes)

    def _complete_many(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        """The hot path: row 4 for a batch in one guarded statement (``complete_many.sql``),
        the same values as ``decisions.finish`` gives for ``Complete``. When every finish
        carries its claimed job, only the columns an attempt can change are read back."""
        params = {
            "now": self._now(),
            "ids": [f.lease.job_id for f in finishes],
            "leases": [f.lease.run_lease for f in finishes],
            "metadata": [dump_json(f.metadata) if f.metadata else None for f in finishes],
        }
        leases = [f.lease for f in finishes]
        claimed = {f.lease.job_id: f.claimed for f in finishes if f.claimed is not None}
        with self._statement("completing jobs") as cur:
            if len(claimed) == len(finishes):
                cur.execute(SQL["complete_many_claimed"], params)
                done = {
                    row[0]: job_after_attempt(claimed[row[0]], row)
                    for row in checked_attempt_rows(cur)
                }
            else:
                cur.execute(SQL["complete_many"], params)
                done = {job.id: job for job in map(job_from_row, checked_rows(cur))}
            missed = [i for i, lease in enumerate(leases) if lease.job_id not in done]
            states = lease_states(cur, sorted({leases[i].job_id for i in missed}))
        results: list[WriteResult | None] = [
            Applied(done[lease.job_id]) if lease.job_id in done else None for lease in leases
        ]
        filled = stale_results(results, leases, states)
        held = held_requests(leases, [result is not None for result in results], states)
        if not held:
            return filled

        def decide(index: int, job: Job, now: datetime) -> decisions.Decision:
            fin = finishes[index]
            return decisions.finish(job, fin.outcome, now, self.rng, fin.progress, fin.metadata)

        return self._write_held("completing jobs", leases, decide, list(filled), held)

    def _fenced(self, action: str, leases: Sequence[Lease], decide: Decide) -> list[WriteResult]:
        """The fenced-write loop (``StoreCore._fenced_in``) for a batch one held row cannot
        hold back (``held_rows.py``): rows other sessions hold are skipped and the rest is
        written at once; then each skipped job's requests are written on their own."""
        if not leases:
            return []
        with self._transaction(action, skip_held=True) as tx:
            results: list[WriteResult | None] = list(self._fenced_in(tx, leases, decide))
            held = tx.held_requests(leases)
        if not held:
            return [result for result in results if result is not None]
        return self._write_held(action, leases, decide, results, held)

    def _write_held(
        self,
        action: str,
        leases: Sequence[Lease],
        decide: Decide,
        results: list[WriteResult | None],
        held: Sequence[int],
    ) -> list[WriteResult]:
        """The second pass: each held job's requests in a transaction that waits for its row
        (``lock_leases.sql``), ``held_row_wait_s`` at most in all."""

        def write_one(group: list[int], wait_s: float) -> list[WriteResult]:
            def decide_one(index: int, job: Job, now: datetime) -> Job | decisions.Decision:
                return decide(group[index], job, now)

            with self._transaction(action, lock_wait_s=wait_s) as tx:
                return self._fenced_in(tx, [leases[i] for i in group], decide_one)

        return write_held(action, leases, results, held, write_one, self.held_row_wait_s)

    # -- maintenance ----------------------------------------------------------------------------
    def _delete_finished(self, retention: Retention, older_than_s: float, limit: int) -> int:
        params = {"now": self._now(), "older_than": timedelta(seconds=older_than_s), "limit": limit}
        with self._statement("deleting finished jobs") as cur:
            cur.execute(SQL[_DELETE_STATEMENT[retention]], params)
            return cur.rowcount

    def _expire_dlq(self, older_than_s: float, limit: int) -> int:
        params = {"now": self._now(), "older_than": timedelta(seconds=older_than_s), "limit": limit}
        with self._statement("expiring dead-letter entries") as cur:
            cur.execute(SQL["expire_dlq"], params)
            return cur.rowcount

    def _try_lead(self, owner: str, ttl_s: float) -> bool:
        """An expiring row in ``awa.leader`` (``try_lead.sql``), not a session advisory lock:
        a pooled store has no session of its own to hold one. The leadership lapses ``ttl_s``
        after the leader's last renewal, so a dead leader is replaced within ``ttl_s``."""
        params = {
            "now": self._now(),
            "name": MAINTENANCE_LEADERSHIP,
            "owner": owner,
            "ttl": timedelta(seconds=ttl_s),
        }
        with self._statement("taking the maintenance leadership") as cur:
            return cur.execute(SQL["try_lead"], params).fetchone() is not None

    def _release_lead(self, owner: str) -> None:
        with self._statement("releasing the maintenance leadership") as cur:
            cur.execute(SQL["release_lead"], {"name": MAINTENANCE_LEADERSHIP, "owner": owner})

    def _record_worker(self, owner: str, kinds: dict[str, tuple[str, ...]], ttl_s: float) -> None:
        params = {
            "now": self._now(),
            "owner": owner,
            "queues": list(kinds),
            "kinds": [dump_json(list(names)) for names in kinds.values()],
            "ttl": timedelta(seconds=ttl_s),
        }
        with self._statement("recording a worker") as cur:
            cur.execute(SQL["record_worker"], params)

    def _forget_worker(self, owner: str) -> None:
        with self._statement("forgetting a worker") as cur:
            cur.execute(SQL["forget_worker"], {"owner": owner})

    def _unhandled_kinds(self) -> list[UnhandledKind]:
        with self._statement("reading kinds no worker handles") as cur:
            rows = fetch_rows(cur.execute(SQL["unhandled_kinds"], {"now": self._now()}))
        return [
            UnhandledKind(queue, kind, runnable, read_time(oldest) or INSTANT_MIN)
            for queue, kind, runnable, oldest in rows
        ]

    def leader(self) -> str | None:
        """Who leads maintenance right now (for tests and diagnostics)."""
        with self._statement("reading the maintenance leader") as cur:
            row = cur.execute(
                SQL["current_leader"], {"now": self._now(), "name": MAINTENANCE_LEADERSHIP}
            ).fetchone()
        return None if row is None else str(row[0])

    # -- health ---------------------------------------------------------------------------------
    def ping(self) -> None:
        """One round trip (``awa.ports.Probes``), bounded like every call: on an idle pooled
        connection, else on one of its own, so that a server gone away is said at once
        (``PoolCalls.ping``); it also checks the schema until that was checked once."""

        def ping(conn: psycopg.Connection[TupleRow]) -> None:
            conn.execute(SQL["ping"])  # first: a broken connection fails here, as the driver's
            if not self._schema_checked:
                migrations.check_schema(conn)
                self._schema_checked = True

        with translate_errors("pinging the database"):
            self._calls.ping("pinging the database", ping)

    @property
    def listening(self) -> bool:
        """Whether the notification connection is up (``awa.ports.Probes``)."""
        return self._subscriptions.connected

    # -- wake-ups -------------------------------------------------------------------------------
    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Hints from ``LISTEN`` on a dedicated connection (see ``listen.py``); the ``LISTEN``
        is active when this returns. Raises ``DatabaseError`` if it cannot connect."""
        check_listener(listener)
        return self._subscriptions.subscribe(listener)

    # -- the queue summary (``awa.ports.SummarizesQueues``) --------------------------------------
    def summarize_queues(self, *, window_s: float = ENDED_WINDOW_S) -> QueueSummary:
        check_seconds("summary window", window_s, allow_zero=False)
        with self._transaction("counting the queues") as tx:
            now = tx.now()
            since = now - timedelta(seconds=window_s)
            window = {"now": now, "since": since}
            dead = fetch_rows(tx.cur.execute(SQL["count_dead_letters"], window))
            states = fetch_rows(tx.cur.execute(SQL["count_queue_states"], window))
            tx.cur.execute(SQL["no_sequential_scans"])
            finished = {**window, "exact_max": FINISHED_EXACT_MAX}
            states += tx.cur.execute(SQL["count_finished_states"], finished).fetchall()
            params = {
                "counted_at": now,
                "window_s": float(window_s),
                "states": dump_json([_json_row(row) for row in states]),
                "dead": dump_json([_json_row(row) for row in dead]),
            }
            tx.cur.execute(SQL["keep_queue_summary"], params)
        summary = self.queue_summary()
        assert summary is not None, "the summary just written is gone"
        return summary

    def queue_summary(self) -> QueueSummary | None:
        with self._statement("reading the queue summary") as cur:
            row = cur.execute(SQL["queue_summary"]).fetchone()
        return None if row is None else summary_from_row(row)

    # -- periodic schedules ---------------------------------------------------------------------
    def list_schedules(self) -> list[ScheduleRecord]:
        with self._statement("listing schedules") as cur:
            return [schedule_from_row(row) for row in cur.execute(SQL["list_schedules"])]

    def _upcoming_schedules(self, limit: int) -> tuple[datetime, list[ScheduleRecord]]:
        params = {"now": self._now(), "limit": limit}
        with self._statement("reading the schedules") as cur:
            rows = cur.execute(SQL["upcoming_schedules"], params).fetchall()
        records = [schedule_from_row(row, DLQ_PREFIX) for row in rows if row[1] is not None]
        return utc(rows[0][0]), records

    def _fire(self, plan: FirePlan) -> list[Job] | None:
        params = {
            **insert_params(plan.jobs, self._now()),
            "name": plan.name,
            "expected_next": plan.expected_next,
            "following": plan.following,
            "last_fire": plan.fires[-1],
        }
        with self._statement("firing a schedule") as cur:
            cur.execute(SQL["fire_schedule"], params)
            rows = checked_rows(cur, _FIRE_PREFIX)
        if not rows[0][0]:
            return None
        fired = (job_from_row(row, _FIRE_PREFIX) for row in rows if row[_FIRE_PREFIX] is not None)
        return sorted(fired, key=lambda job: job.id)

    def _remove_schedule(self, name: str) -> bool:
        with self._statement("removing a schedule") as cur:
            cur.execute(SQL["remove_schedule"], {"name": name})
            return cur.rowcount > 0


def _json_row(row: Sequence[Any]) -> list[Any]:
    """A counted group as a JSON array: timestamps as ISO 8601 text, one that cannot be read
    (``Raw``) as the nearest one that can."""
    return [
        (read_time(value) or INSTANT_MIN).isoformat()
        if isinstance(value, (datetime, Raw))
        else value
        for value in row
    ]


def _due_order(job: Job) -> tuple[datetime, int]:
    return (job.run_at, job.id)
