"""The PostgreSQL claim store: ``awa.ports.ClaimStore`` on psycopg 3.

The domain decides, this module acts. A fenced write runs in one transaction: one statement
locks the rows whose ``(id, run_lease, live state)`` the caller still owns (the lease guard,
``lock_leases.sql``), the domain's decision functions compute every new value in Python with the
transaction's ``now``, and one batched statement writes them back. The claim, insert and promote
hot paths compute their single transition in SQL, with the same values as the domain.

Time is the database's ``now()`` unless a clock is injected, whose time is then bound as a
parameter: worker hosts need not agree about the time, and tests expire leases without sleeping.
"""

from __future__ import annotations

import asyncio
import random
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

import psycopg
from psycopg.rows import TupleRow
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool

from awa.adapters.postgres import migrations
from awa.adapters.postgres._errors import translate_errors
from awa.adapters.postgres._rows import (
    dlq_entry_from_row,
    dump_json,
    fast_json_loads,
    insert_params,
    interval,
    job_from_row,
    restore_params,
    utc,
    write_params,
)
from awa.adapters.postgres._sql import SQL
from awa.adapters.postgres.connections import (
    CALL_TIMEOUT_S_DEFAULT,
    CONNECT_TIMEOUT_S_DEFAULT,
    STATEMENT_TIMEOUT_S_DEFAULT,
    Bounds,
    PoolCalls,
    connect_options,
    connector,
    session_options,
)
from awa.adapters.postgres.enqueue import check_new_jobs, insert_on, woken_queues
from awa.adapters.postgres.listen import Subscriptions, pool_connector
from awa.adapters.postgres.loop_inserts import LoopInserts
from awa.domain import (
    CallbackNotFound,
    Complete,
    Decision,
    DlqEntry,
    IllegalTransition,
    Job,
    JobNotFound,
    JobState,
    Lease,
    NewJob,
    Resolution,
    ValidationError,
    decisions,
)
from awa.domain.rescue import rescue_cause
from awa.domain.transitions import Trigger, allowed_from
from awa.domain.validation import check_queue, check_seconds, check_state
from awa.ports import (
    DEFAULT_DEADLINE_S,
    DEFAULT_STALENESS_S,
    Applied,
    Event,
    Finish,
    Heartbeat,
    QueueStats,
    Rescued,
    Stale,
    StaleReason,
    WriteResult,
)
from awa.ports.checks import (
    check_dlq_filter,
    check_finishes,
    check_heartbeats,
    check_job_id,
    check_limit,
)

__all__ = ["PostgresStore"]

_T = TypeVar("_T")
Cursor = psycopg.Cursor[TupleRow]
Pool = ConnectionPool[psycopg.Connection[TupleRow]]
# the columns before the job in lock_leases.sql rows: now, requested_lease, dlq_enabled
_LEASE_PREFIX = 3
# ... and in lock_job.sql, lock_callback.sql and rescue_candidates.sql rows: now, dlq_enabled
_LOCK_PREFIX = 2
POOL_SIZE_DEFAULT = 10
#: the leadership name maintenance takes (a row of awa.leader)
MAINTENANCE_LEADERSHIP = "maintenance"


class _Now(Protocol):
    def now(self) -> datetime: ...


class _Random(Protocol):
    def random(self) -> float: ...

    def getrandbits(self, k: int, /) -> int: ...


def _all_distinct_completions(finishes: Sequence[Finish]) -> bool:
    """A batch the hot path can take: only ``Complete``, each job once."""
    return all(isinstance(f.outcome, Complete) for f in finishes) and len(
        {f.lease.job_id for f in finishes}
    ) == len(finishes)


def _utc_now(when: datetime) -> datetime:
    """The transaction's ``now`` as read back from SQL, in UTC like every domain timestamp."""
    return utc(when)


def _stale_reason(lease: Lease, current: tuple[int, str] | None) -> StaleReason:
    """Why a write for ``lease`` matched nothing, from the job's ``(run_lease, state)``."""
    if current is None:
        return StaleReason.NOT_FOUND
    run_lease, state = current
    if run_lease != lease.run_lease:
        return StaleReason.LEASE_SUPERSEDED
    if state == JobState.CANCELLED.value:
        return StaleReason.CANCELLED
    return StaleReason.STATE_CHANGED


class _Writes:
    """Decided values collected in one transaction, then written back in two statements at
    most: the batched update, and the move of dead-lettered jobs."""

    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}
        self.dead_letters: dict[int, str] = {}

    def keep(self, job: Job) -> None:
        self.jobs[job.id] = job

    def decided(self, decision: Decision, dlq_enabled: bool) -> bool:
        """Record a decision; returns whether it sends the job to the dead-letter queue."""
        self.keep(decision.job)
        dead = (
            dlq_enabled
            and decision.job.state is JobState.FAILED
            and decision.dlq_reason is not None
        )
        if dead:
            assert decision.dlq_reason is not None
            self.dead_letters[decision.job.id] = decision.dlq_reason
        return dead

    def flush(self, cur: Cursor, now: datetime) -> None:
        if self.jobs:
            cur.execute(SQL["write_jobs"], write_params(list(self.jobs.values())))
        if self.dead_letters:
            cur.execute(
                SQL["move_to_dlq"],
                {
                    "now": now,
                    "ids": list(self.dead_letters),
                    "reasons": list(self.dead_letters.values()),
                },
            )
        woken = woken_queues(list(self.jobs.values()))
        if woken:
            cur.execute(SQL["notify_wakeup"], {"queues": woken})


class PostgresStore:
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
    by one call, after which the connection is abandoned and replaced.
    """

    def __init__(
        self,
        database: str | Pool,
        *,
        clock: _Now | None = None,
        rng: _Random | None = None,
        pool_size: int = POOL_SIZE_DEFAULT,
        connect_timeout_s: float = CONNECT_TIMEOUT_S_DEFAULT,
        statement_timeout_s: float | None = STATEMENT_TIMEOUT_S_DEFAULT,
        call_timeout_s: float = CALL_TIMEOUT_S_DEFAULT,
    ) -> None:
        bounds = Bounds.checked(connect_timeout_s, statement_timeout_s, call_timeout_s)
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
            )
            self._owns_pool = True
            with translate_errors("opening the connection pool"):
                self._pool.open()
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
        with translate_errors("migrating the awa schema"), self._pool.connection() as conn:
            applied = migrations.migrate(conn)
        self._schema_checked = True
        return applied

    def _now(self) -> datetime | None:
        """The injected clock's time, bound into SQL; ``None`` lets SQL use ``now()``."""
        return self.clock.now() if self.clock is not None else None

    @contextmanager
    def _connection(self, action: str) -> Iterator[psycopg.Connection[TupleRow]]:
        with translate_errors(action), self._calls.connection(action) as conn:
            if conn not in self._configured:
                set_json_loads(fast_json_loads, conn)
                self._configured.add(conn)
            if not self._schema_checked:
                with self._schema_lock:
                    migrations.check_schema(conn)
                    self._schema_checked = True
            yield conn

    @contextmanager
    def _transaction(self, action: str) -> Iterator[Cursor]:
        with self._connection(action) as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    @contextmanager
    def _statement(self, action: str) -> Iterator[Cursor]:
        """For one statement: no explicit transaction (on autocommit connections, one round
        trip)."""
        with self._connection(action) as conn, conn.cursor() as cur:
            yield cur

    # -- producers ------------------------------------------------------------------------------
    def insert(self, jobs: Sequence[NewJob]) -> list[Job]:
        params = insert_params(check_new_jobs(jobs), self._now())
        if not jobs:
            return []
        with self._connection("inserting jobs") as conn:  # one statement: no BEGIN/COMMIT
            return insert_on(conn, params)

    async def insert_async(self, jobs: Sequence[NewJob]) -> list[Job]:
        """``insert`` awaited on an event loop (``awa.ports.AsyncInserts``). The first insert
        goes through the pool (it checks the schema); later ones use a connection of the
        loop's own, opened in the background, whenever it is free."""
        checked = list(check_new_jobs(jobs))
        inserted = await self._loop_inserts.insert(checked, self.clock)
        if inserted is not None:
            return inserted
        stored = await asyncio.to_thread(self.insert, checked)
        self._loop_inserts.stored()
        return stored

    async def close_async(self) -> None:
        """Close the connection ``insert_async`` opened on this event loop."""
        await self._loop_inserts.close()

    # -- workers --------------------------------------------------------------------------------
    def claim(
        self, queue: str, *, limit: int, deadline_duration_s: float = DEFAULT_DEADLINE_S
    ) -> list[Job]:
        check_queue(queue)
        check_limit(limit)
        check_seconds("deadline_duration", deadline_duration_s)
        params = {
            "now": self._now(),
            "queue": queue,
            "limit": limit,
            "deadline": interval(deadline_duration_s),
        }
        with self._statement("claiming jobs") as cur:
            rows = cur.execute(SQL["claim"], params).fetchall()
        jobs = [job_from_row(row) for row in rows]
        jobs.sort(key=lambda job: (job.priority, job.run_at, job.id))
        return jobs

    def heartbeat(self, beats: Sequence[Heartbeat]) -> list[WriteResult]:
        check_heartbeats(beats)

        def decide(index: int, job: Job, now: datetime, _: bool, writes: _Writes) -> Job:
            beat = beats[index]
            beaten = decisions.heartbeat(job, now, beat.progress, beat.metadata)
            writes.keep(beaten)
            return beaten

        return self._fenced("heartbeat", [b.lease for b in beats], decide)

    def finish(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        check_finishes(finishes)

        if finishes and _all_distinct_completions(finishes):
            return self._complete_many(finishes)

        def decide(index: int, job: Job, now: datetime, dlq_enabled: bool, writes: _Writes) -> Job:
            fin = finishes[index]
            decision = decisions.finish(job, fin.outcome, now, self.rng, fin.progress, fin.metadata)
            writes.decided(decision, dlq_enabled)
            return decision.job

        return self._fenced("finish", [f.lease for f in finishes], decide)

    def _complete_many(self, finishes: Sequence[Finish]) -> list[WriteResult]:
        """The hot path: row 4 for a batch in one guarded statement (``complete_many.sql``),
        the same values as ``decisions.finish`` gives for ``Complete``."""
        params = {
            "now": self._now(),
            "ids": [f.lease.job_id for f in finishes],
            "leases": [f.lease.run_lease for f in finishes],
            "metadata": [dump_json(f.metadata) if f.metadata else None for f in finishes],
        }
        with self._statement("completing jobs") as cur:
            rows = cur.execute(SQL["complete_many"], params).fetchall()
            done = {row[0]: job_from_row(row) for row in rows}
            missed = [i for i, f in enumerate(finishes) if f.lease.job_id not in done]
            stale = iter(
                self._all_stale(cur, [f.lease for f in finishes], missed) if missed else ()
            )
        return [
            Applied(done[f.lease.job_id]) if f.lease.job_id in done else next(stale)
            for f in finishes
        ]

    def register_callback(
        self, lease: Lease, *, timeout_s: float = 3600.0, callback_id: str | None = None
    ) -> WriteResult:
        check_seconds("callback timeout", timeout_s, allow_zero=False)
        if callback_id is not None and (not isinstance(callback_id, str) or not callback_id):
            raise ValidationError(f"a callback id is a non-empty string, got {callback_id!r}")
        if callback_id is None:
            callback_id = self._new_callback_id()
        cid = callback_id

        def decide(_: int, job: Job, now: datetime, __: bool, writes: _Writes) -> Job:
            registered = decisions.register_callback(job, cid, timeout_s, now)
            writes.keep(registered)
            return registered

        with self._transaction("registering a callback") as cur:
            pending = cur.execute(SQL["callback_pending"], {"callback_id": cid}).fetchone()
            if pending and pending[0]:
                raise ValidationError(f"callback id {cid!r} is already pending")
            return self._fenced_on(cur, [lease], decide)[0]

    def _new_callback_id(self) -> str:
        if self._seeded_rng is not None:
            return str(uuid.UUID(int=self._seeded_rng.getrandbits(128), version=4))
        return str(uuid.uuid4())

    def _fenced(
        self,
        what: str,
        leases: Sequence[Lease],
        decide: Callable[[int, Job, datetime, bool, _Writes], Job],
    ) -> list[WriteResult]:
        if not leases:
            return []
        with self._transaction(what) as cur:
            return self._fenced_on(cur, leases, decide)

    def _fenced_on(
        self,
        cur: Cursor,
        leases: Sequence[Lease],
        decide: Callable[[int, Job, datetime, bool, _Writes], Job],
    ) -> list[WriteResult]:
        """Apply ``decide`` to each request whose lease still owns its job, in request order,
        inside the caller's transaction. A later request for the same job sees the earlier
        one's result, as if the requests had come one by one."""
        rows = cur.execute(
            SQL["lock_leases"],
            {
                "now": self._now(),
                "ids": [lease.job_id for lease in leases],
                "leases": [lease.run_lease for lease in leases],
            },
        ).fetchall()
        if not rows:
            return self._all_stale(cur, leases, range(len(leases)))
        now = _utc_now(rows[0][0])
        owned = {(row[3], row[1]): (job_from_row(row, _LEASE_PREFIX), row[2]) for row in rows}
        current: dict[int, Job | None] = {}  # jobs this batch changed; None: dead-lettered
        writes = _Writes()
        results: list[WriteResult | None] = []
        unowned: list[int] = []
        for index, lease in enumerate(leases):
            found = owned.get((lease.job_id, lease.run_lease))
            if found is None:
                results.append(None)
                unowned.append(index)
                continue
            job, dlq_enabled = found
            if lease.job_id in current:
                latest = current[lease.job_id]
                if latest is None:
                    results.append(Stale(lease, StaleReason.NOT_FOUND))
                    continue
                job = latest
            try:
                new = decide(index, job, now, dlq_enabled, writes)
            except IllegalTransition:
                results.append(Stale(lease, _stale_reason(lease, (job.run_lease, job.state))))
                continue
            except CallbackNotFound:
                results.append(Stale(lease, StaleReason.CALLBACK_RESOLVED))
                continue
            current[job.id] = None if job.id in writes.dead_letters else new
            results.append(Applied(new))
        writes.flush(cur, now)
        if unowned:
            stale = self._all_stale(cur, leases, unowned)
            for index, result in zip(unowned, stale, strict=True):
                results[index] = result
        return [r for r in results if r is not None]

    def _all_stale(
        self, cur: Cursor, leases: Sequence[Lease], indexes: Sequence[int]
    ) -> list[WriteResult]:
        ids = sorted({leases[i].job_id for i in indexes})
        rows = cur.execute(SQL["lookup_leases"], {"ids": ids}).fetchall()
        current = {row[0]: (row[1], row[2]) for row in rows}
        return [
            Stale(leases[i], _stale_reason(leases[i], current.get(leases[i].job_id)))
            for i in indexes
        ]

    # -- the external side of a callback --------------------------------------------------------
    def resolve_callback(self, callback_id: str, resolution: Resolution) -> Job:
        payload = getattr(resolution, "payload", None)
        if payload is not None:
            dump_json(payload)  # refuse what jsonb cannot hold before any SQL runs
        with self._transaction("resolving a callback") as cur:
            job, now, dlq_enabled = self._lock_callback(cur, callback_id)
            decision = decisions.resolve_callback(job, callback_id, resolution, now)
            writes = _Writes()
            writes.decided(decision, dlq_enabled)
            writes.flush(cur, now)
            cur.execute(SQL["notify_callback"], {"id": job.id, "run_lease": job.run_lease})
            return decision.job

    def heartbeat_callback(self, callback_id: str, *, timeout_s: float) -> Job:
        check_seconds("callback timeout", timeout_s, allow_zero=False)
        with self._transaction("extending a callback") as cur:
            job, now, _ = self._lock_callback(cur, callback_id)
            extended = decisions.heartbeat_callback(job, callback_id, timeout_s, now)
            writes = _Writes()
            writes.keep(extended)
            writes.flush(cur, now)
            return extended

    def _lock_callback(self, cur: Cursor, callback_id: str) -> tuple[Job, datetime, bool]:
        if not isinstance(callback_id, str):
            raise CallbackNotFound(str(callback_id))
        row = cur.execute(
            SQL["lock_callback"], {"now": self._now(), "callback_id": callback_id}
        ).fetchone()
        if row is None:
            raise CallbackNotFound(callback_id)
        return job_from_row(row, _LOCK_PREFIX), _utc_now(row[0]), row[1]

    # -- maintenance ----------------------------------------------------------------------------
    def rescue(
        self, *, staleness_s: float = DEFAULT_STALENESS_S, limit: int = 1000
    ) -> list[Rescued]:
        check_seconds("heartbeat staleness", staleness_s, allow_zero=False)
        check_limit(limit)
        params = {"now": self._now(), "staleness": timedelta(seconds=staleness_s), "limit": limit}
        with self._transaction("rescuing jobs") as cur:
            rows = cur.execute(SQL["rescue_candidates"], params).fetchall()
            if not rows:
                return []
            now = _utc_now(rows[0][0])
            writes = _Writes()
            rescued = []
            for row in rows:  # in id order, like every adapter, so jitter draws line up
                job = job_from_row(row, _LOCK_PREFIX)
                cause = rescue_cause(job, now, staleness_s)
                if cause is None:  # the SQL and the domain disagree: a bug, not a race
                    raise AssertionError(
                        f"rescue selected job {job.id} but the domain has no cause"
                    )
                decision = decisions.rescue(job, cause, now, self.rng)
                dead = writes.decided(decision, row[1])
                rescued.append(Rescued(decision.job, cause, dead))
            writes.flush(cur, now)
            return rescued

    def promote(self, *, limit: int = 1000) -> list[Job]:
        check_limit(limit)
        with self._transaction("promoting jobs") as cur:
            rows = cur.execute(SQL["promote"], {"now": self._now(), "limit": limit}).fetchall()
            promoted = sorted((job_from_row(row) for row in rows), key=lambda j: (j.run_at, j.id))
            woken = woken_queues(promoted)
            if woken:
                cur.execute(SQL["notify_wakeup"], {"queues": woken})
            return promoted

    def delete_finished(self, *, older_than_s: float, limit: int = 1000) -> int:
        check_seconds("older_than", older_than_s)
        check_limit(limit)
        params = {"now": self._now(), "older_than": timedelta(seconds=older_than_s), "limit": limit}
        with self._statement("deleting finished jobs") as cur:
            cur.execute(SQL["delete_finished"], params)
            return cur.rowcount

    def expire_dlq(self, *, older_than_s: float, limit: int = 1000) -> int:
        check_seconds("older_than", older_than_s)
        check_limit(limit)
        params = {"now": self._now(), "older_than": timedelta(seconds=older_than_s), "limit": limit}
        with self._statement("expiring dead-letter entries") as cur:
            cur.execute(SQL["expire_dlq"], params)
            return cur.rowcount

    def try_lead(self, owner: str, *, ttl_s: float) -> bool:
        """An expiring row in ``awa.leader`` (``try_lead.sql``), not a session advisory lock:
        a pooled store has no session of its own to hold one. The leadership lapses ``ttl_s``
        after the leader's last renewal, so a dead leader is replaced within ``ttl_s``."""
        check_seconds("leader ttl", ttl_s, allow_zero=False)
        if not isinstance(owner, str) or not owner.strip():
            raise ValidationError(f"a leader is a non-empty string, got {owner!r}")
        params = {
            "now": self._now(),
            "name": MAINTENANCE_LEADERSHIP,
            "owner": owner,
            "ttl": timedelta(seconds=ttl_s),
        }
        with self._statement("taking the maintenance leadership") as cur:
            return cur.execute(SQL["try_lead"], params).fetchone() is not None

    def release_lead(self, owner: str) -> None:
        with self._statement("releasing the maintenance leadership") as cur:
            cur.execute(SQL["release_lead"], {"name": MAINTENANCE_LEADERSHIP, "owner": owner})

    def leader(self) -> str | None:
        """Who leads maintenance right now (for tests and diagnostics)."""
        with self._statement("reading the maintenance leader") as cur:
            row = cur.execute(
                SQL["current_leader"], {"now": self._now(), "name": MAINTENANCE_LEADERSHIP}
            ).fetchone()
        return None if row is None else str(row[0])

    # -- wake-ups -------------------------------------------------------------------------------
    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Hints from ``LISTEN`` on a dedicated connection (see ``listen.py``); the ``LISTEN``
        is active when this returns. Raises ``DatabaseError`` if it cannot connect."""
        return self._subscriptions.subscribe(listener)

    # -- operators ------------------------------------------------------------------------------
    def get_job(self, job_id: int) -> Job:
        check_job_id(job_id)
        with self._statement("reading a job") as cur:
            row = cur.execute(SQL["get_job"], {"id": job_id}).fetchone()
        if row is None:
            raise JobNotFound(job_id)
        return job_from_row(row)

    def list_jobs(
        self,
        *,
        state: JobState | None = None,
        kind: str | None = None,
        queue: str | None = None,
        limit: int = 100,
    ) -> list[Job]:
        if state is not None:
            state = check_state(state)
        check_dlq_filter(queue, kind, all=True)
        check_limit(limit)
        params = {
            "state": state.value if state is not None else None,
            "kind": kind,
            "queue": queue,
            "limit": limit,
        }
        with self._statement("listing jobs") as cur:
            rows = cur.execute(SQL["list_jobs"], params).fetchall()
        return [job_from_row(row) for row in rows]

    def _lock_job(self, cur: Cursor, job_id: int) -> tuple[Job, datetime, bool] | None:
        row = cur.execute(SQL["lock_job"], {"now": self._now(), "id": job_id}).fetchone()
        if row is None:
            return None
        return job_from_row(row, _LOCK_PREFIX), _utc_now(row[0]), row[1]

    def cancel(self, job_id: int) -> Job:
        check_job_id(job_id)
        with self._transaction("cancelling a job") as cur:
            locked = self._lock_job(cur, job_id)
            if locked is None:
                row = cur.execute(SQL["get_job"], {"id": job_id}).fetchone()
                if row is None:
                    raise JobNotFound(job_id)
                dead = job_from_row(row)  # in the dead-letter queue: failed, so not cancellable
                raise IllegalTransition(
                    dead.state, Trigger.CANCEL, allowed_from(Trigger.CANCEL), job_id
                )
            job, now, dlq_enabled = locked
            decision = decisions.cancel(job, now)
            writes = _Writes()
            writes.decided(decision, dlq_enabled)
            writes.flush(cur, now)
            if job.state.is_live:
                cur.execute(SQL["notify_cancel"], {"id": job.id, "run_lease": job.run_lease})
            return decision.job

    def retry(self, job_id: int) -> Job:
        check_job_id(job_id)
        with self._transaction("retrying a job") as cur:
            locked = self._lock_job(cur, job_id)
            if locked is None:
                return self._retry_from_dlq_on(cur, job_id)
            job, now, _ = locked
            retried = decisions.operator_retry(job, now)
            writes = _Writes()
            writes.keep(retried)
            writes.flush(cur, now)
            return retried

    def pause_queue(self, queue: str) -> None:
        check_queue(queue)
        with self._statement("pausing a queue") as cur:
            cur.execute(SQL["set_queue_paused"], {"queue": queue, "paused": True})

    def resume_queue(self, queue: str) -> None:
        check_queue(queue)
        with self._transaction("resuming a queue") as cur:
            cur.execute(SQL["set_queue_paused"], {"queue": queue, "paused": False})
            cur.execute(SQL["notify_wakeup"], {"queues": [queue]})

    def set_dlq_enabled(self, queue: str, enabled: bool) -> None:
        check_queue(queue)
        with self._statement("configuring a queue") as cur:
            cur.execute(
                SQL["set_queue_dlq_enabled"], {"queue": queue, "dlq_enabled": bool(enabled)}
            )

    def queue_stats(self) -> list[QueueStats]:
        with self._statement("reading queue statistics") as cur:
            rows = cur.execute(SQL["queue_stats"]).fetchall()
        return [
            QueueStats(
                queue=queue,
                counts={state: by_state.get(state.value, 0) for state in JobState},
                dlq_depth=dlq_depth,
                paused=paused,
                dlq_enabled=dlq_enabled,
                oldest_available_at=utc(oldest),
            )
            for queue, by_state, dlq_depth, paused, dlq_enabled, oldest in rows
        ]

    # -- the dead-letter queue ------------------------------------------------------------------
    def move_to_dlq(self, job_id: int, *, reason: str) -> DlqEntry:
        check_job_id(job_id)
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError("a dead-letter reason is required")
        with self._transaction("moving a job to the dead-letter queue") as cur:
            locked = self._lock_job(cur, job_id)
            if locked is None:
                raise JobNotFound(job_id)
            job, now, _ = locked
            entry = decisions.move_to_dlq(job, reason, now)
            cur.execute(SQL["move_to_dlq"], {"now": now, "ids": [job_id], "reasons": [reason]})
            return entry

    def list_dlq(
        self, *, queue: str | None = None, kind: str | None = None, limit: int = 100
    ) -> list[DlqEntry]:
        check_dlq_filter(queue, kind, all=True)
        check_limit(limit)
        with self._statement("listing the dead-letter queue") as cur:
            rows = cur.execute(
                SQL["list_dlq"], {"queue": queue, "kind": kind, "limit": limit}
            ).fetchall()
        return [dlq_entry_from_row(row) for row in rows]

    def get_dlq_entry(self, job_id: int) -> DlqEntry | None:
        check_job_id(job_id)
        with self._statement("reading a dead-letter entry") as cur:
            row = cur.execute(SQL["get_dlq_entry"], {"id": job_id}).fetchone()
        return None if row is None else dlq_entry_from_row(row)

    def retry_from_dlq(self, job_id: int) -> Job:
        check_job_id(job_id)
        with self._transaction("retrying a dead-letter job") as cur:
            return self._retry_from_dlq_on(cur, job_id)

    def _retry_from_dlq_on(self, cur: Cursor, job_id: int) -> Job:
        row = cur.execute(SQL["take_from_dlq"], {"now": self._now(), "id": job_id}).fetchone()
        if row is None:
            raise JobNotFound(job_id)
        return self._restore(cur, [row])[0]

    def _restore(self, cur: Cursor, rows: Sequence[Sequence[Any]]) -> list[Job]:
        """Row 20 for locked dead-letter rows (``now`` first, then the job)."""
        now = _utc_now(rows[0][0])
        retried = [decisions.operator_retry(job_from_row(row, 1), now) for row in rows]
        cur.execute(SQL["delete_from_dlq"], {"ids": [job.id for job in retried]})
        cur.execute(SQL["restore_jobs"], restore_params(retried))
        cur.execute(SQL["notify_wakeup"], {"queues": woken_queues(retried)})
        return retried

    def bulk_retry_from_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> list[Job]:
        check_dlq_filter(queue, kind, all)
        with self._transaction("retrying dead-letter jobs") as cur:
            rows = cur.execute(
                SQL["lock_dlq_matching"], {"now": self._now(), "queue": queue, "kind": kind}
            ).fetchall()
            return self._restore(cur, rows) if rows else []

    def purge_dlq(
        self, *, queue: str | None = None, kind: str | None = None, all: bool = False
    ) -> int:
        check_dlq_filter(queue, kind, all)
        with self._statement("purging the dead-letter queue") as cur:
            cur.execute(SQL["purge_dlq"], {"queue": queue, "kind": kind})
            return cur.rowcount
