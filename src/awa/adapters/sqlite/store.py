"""The SQLite claim store: ``awa.ports.ClaimStore`` on the standard library's ``sqlite3``.

The lifecycle is the core's (argument checks, the fenced-write loop, every decision, and
insert, claim, promote and fire over the rows: ``awa.adapters.core``); this module supplies
its primitives, and its transaction (``transaction.py``) the rows. Every write runs in one
``BEGIN IMMEDIATE`` transaction, which takes the file's write lock before it reads: what a
transaction read stays as it read it until it commits, across every process on the file, so
"lock these rows" is a read and each transition is the domain's own, written back with
``write_job.sql``. Readers never wait (WAL mode); a writer that finds the lock taken waits up to
``busy_timeout_s``.

Time is the injected clock's, else the system clock's: processes on one host share it.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from awa.adapters._presence import WorkerPresence
from awa.adapters._summaries import list_params
from awa.adapters.core import JobQuery, RowPaths, SettingsChange, StoreCore
from awa.adapters.sqlite import migrations, summaries
from awa.adapters.sqlite._errors import translate_errors
from awa.adapters.sqlite._queues import settings_of, settings_params, us_of
from awa.adapters.sqlite._rows import (
    STATES,
    dlq_entry_from_row,
    dump_json,
    job_from_row,
    load_json,
    micros,
    read_time,
    schedule_from_row,
    time_of,
)
from awa.adapters.sqlite._sql import SQL
from awa.adapters.sqlite.files import create_private
from awa.adapters.sqlite.hints import HintPoller
from awa.adapters.sqlite.transaction import SqliteTransaction
from awa.domain import (
    DatabaseError,
    DlqEntry,
    Job,
    JobState,
    ScheduleRecord,
    ValidationError,
)
from awa.domain.retention import Retention
from awa.domain.validation import INSTANT_MIN, check_seconds
from awa.ports import (
    CancelRequested,
    Clock,
    Event,
    JobsAvailable,
    QueueSettings,
    QueueStats,
    SystemClock,
    UnhandledKind,
)
from awa.ports.checks import check_listener
from awa.ports.listing import Home, JobSummary
from awa.ports.summary import ENDED_WINDOW_S, DlqGroup, QueueSummary, StateGroup, build_summary
from awa.ports.unchanged import UNCHANGED

__all__ = ["MEMORY", "SqliteStore"]

#: the path of a throwaway database that lives as long as its store
MEMORY = ":memory:"
BUSY_TIMEOUT_S_DEFAULT = 30.0
#: how long a health check's read waits for a file locked outright (readers wait for no writer)
PING_BUSY_TIMEOUT_S = 1.0
HINT_POLL_INTERVAL_S_DEFAULT = 0.025
#: the leadership name maintenance takes (a row of awa_leader)
MAINTENANCE_LEADERSHIP = "maintenance"
# hint rows kept for listeners of other processes (prune_hints.sql); pruned every so often
_HINTS_KEPT = 1000
_PRUNE_EVERY = 256
#: each retention's delete, over the states awa.domain.retention gives it
#: (tests/contract/test_retention_sql.py)
_DELETE_STATEMENT = {Retention.COMPLETED: "delete_completed", Retention.FAILED: "delete_failed"}


class SqliteStore(RowPaths, StoreCore, WorkerPresence):
    """``ClaimStore`` in one SQLite file (or ``":memory:"``, gone with the store).

    Several threads share the store (one connection, one lock) and several processes share
    the file (SQLite's write lock, ``BEGIN IMMEDIATE``). The schema is migrated on open unless
    ``migrate=False`` (then ``store.migrate()``, or ``awa migrate``, does it); a missing file
    is created unless ``create=False`` (then it is a ``DatabaseError``). ``clock``
    replaces the system clock (tests, simulation); ``rng`` is the backoff jitter's source and
    makes callback ids reproducible. ``busy_timeout_s``: how long a write waits for another
    process's transaction; ``hint_poll_interval_s``: how often listeners look for other
    processes' hints."""

    def __init__(
        self,
        path: str,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        migrate: bool = True,
        create: bool = True,
        busy_timeout_s: float = BUSY_TIMEOUT_S_DEFAULT,
        hint_poll_interval_s: float = HINT_POLL_INTERVAL_S_DEFAULT,
    ) -> None:
        if not isinstance(path, str) or not path or "\x00" in path:
            raise ValidationError(f"a SQLite database is a file path or ':memory:', got {path!r}")
        self.path = path
        self._create = create
        # SQLite's own busy handler: it sleeps 1, 2, 5 ... 100 ms between tries, which lets a
        # process that has the lock keep it for a few transactions, its page cache warm (a
        # handler retrying every millisecond drained 4 processes 30-40% slower: performance.md)
        self.busy_timeout_s = check_seconds("busy timeout", busy_timeout_s, allow_zero=True)
        self.hint_poll_interval_s = check_seconds(
            "hint poll interval", hint_poll_interval_s, allow_zero=False
        )
        self.clock: Clock = clock if clock is not None else SystemClock()
        self._seeded_rng = rng
        self.rng = rng if rng is not None else random.Random()
        self._origin = uuid.uuid4().hex
        self._lock = threading.RLock()
        self._listeners: list[Callable[[Event], None]] = []
        self._poller: HintPoller | None = None
        self._closed = False
        self._hints_written = 0
        if not create and path != MEMORY and not os.path.exists(path):
            raise DatabaseError(f"no SQLite database at {path} (`awa migrate` creates one)")
        with translate_errors("opening the SQLite database"):
            if create and path != MEMORY:
                create_private(path)  # 0600, before sqlite3 makes it 0644 (files.py)
            self._conn = self._connect()
            if path != MEMORY:
                _use_wal(self._conn, self.busy_timeout_s)
            if migrate:
                version = migrations.schema_version(self._conn)
                if version is None or version < migrations.LATEST_VERSION:
                    migrations.migrate(self._conn, self.clock.now())
            self._schema_checked = False

    def _connect(self) -> sqlite3.Connection:
        # mode=rw: open an existing file only (an operator's typo must not make an empty one)
        where = self.path if self._create else f"file:{quote(self.path)}?mode=rw"
        conn = sqlite3.connect(
            where,
            uri=not self._create,
            isolation_level=None,  # autocommit: each transaction is an explicit BEGIN
            check_same_thread=False,  # the store's lock serialises its use
            timeout=self.busy_timeout_s,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
        # WAL: a commit appends to the log without fsync; a killed process loses nothing
        # committed, a power cut may lose the last commits but never corrupts the file
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn

    # -- plumbing -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the hint poller and close the connection (a ``":memory:"`` store is gone)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            poller, self._poller = self._poller, None
        if poller is not None:
            poller.stop()
        with self._lock:
            self._conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def migrate(self) -> list[int]:
        """Bring the schema up to date (``awa migrate``); returns the versions applied."""
        with self._lock, translate_errors("migrating the awa schema"):
            applied = migrations.migrate(self._conn, self.clock.now())
        self._schema_checked = True
        return applied

    @contextmanager
    def _connection(self, action: str) -> Iterator[sqlite3.Connection]:
        """The connection, for this thread alone, on a file whose schema was checked."""
        with self._lock, translate_errors(action):
            if self._closed:
                raise sqlite3.ProgrammingError("the store is closed")
            if not self._schema_checked:
                migrations.check_schema(self._conn)
                self._schema_checked = True
            yield self._conn

    @contextmanager
    def _transaction(self, action: str) -> Iterator[SqliteTransaction]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; the hints it raised reach this store's
        listeners once it committed (and other processes' through ``awa_hints``)."""
        with self._connection(action) as conn:
            conn.execute("BEGIN IMMEDIATE")
            tx = SqliteTransaction(conn, self.clock.now())
            try:
                yield tx
                if tx.events:
                    self._write_hints(conn, tx.events)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            listeners = list(self._listeners)
        for event in tx.events:
            for listener in listeners:
                listener(event)

    def _write_hints(self, conn: sqlite3.Connection, events: Sequence[Event]) -> None:
        rows: list[tuple[str, str | None, int | None, int | None]] = []
        for event in events:
            if isinstance(event, JobsAvailable):
                rows.append(("available", event.queue, None, None))
            else:
                kind = "cancel" if isinstance(event, CancelRequested) else "callback"
                rows.append((kind, None, event.lease.job_id, event.lease.run_lease))
        conn.executemany(
            SQL["add_hint"],
            [
                {"origin": self._origin, "kind": k, "queue": q, "job_id": i, "run_lease": r}
                for k, q, i, r in rows
            ],
        )
        before, self._hints_written = self._hints_written, self._hints_written + len(rows)
        if before // _PRUNE_EVERY != self._hints_written // _PRUNE_EVERY:
            conn.execute(SQL["prune_hints"], {"keep": _HINTS_KEPT})

    def _rows(self, action: str, statement: str, params: dict[str, Any] | None = None) -> Any:
        with self._connection(action) as conn:
            return conn.execute(SQL[statement], params or {}).fetchall()

    def _snapshot(self, action: str, *statements: str) -> list[list[Any]]:
        """Each statement's rows, all read from one snapshot of the file."""
        with self._connection(action) as conn:
            conn.execute("BEGIN")
            try:
                return [conn.execute(SQL[statement]).fetchall() for statement in statements]
            finally:
                conn.execute("COMMIT")

    def _change(self, action: str, statement: str, params: dict[str, Any]) -> int:
        """One writing statement, as its own transaction; how many rows it changed."""
        with self._transaction(action) as tx:
            return tx.conn.execute(SQL[statement], params).rowcount

    def _new_callback_id(self) -> str:
        if self._seeded_rng is not None:
            return str(uuid.UUID(int=self._seeded_rng.getrandbits(128), version=4))
        return str(uuid.uuid4())

    # -- maintenance ----------------------------------------------------------------------------
    def _delete_finished(self, retention: Retention, older_than_s: float, limit: int) -> int:
        params = {
            "now": micros(self.clock.now()),
            "older_than": us_of(older_than_s),
            "limit": limit,
        }
        return self._change("deleting finished jobs", _DELETE_STATEMENT[retention], params)

    def _expire_dlq(self, older_than_s: float, limit: int) -> int:
        params = {
            "now": micros(self.clock.now()),
            "older_than": us_of(older_than_s),
            "limit": limit,
        }
        return self._change("expiring dead-letter entries", "expire_dlq", params)

    def _try_lead(self, owner: str, ttl_s: float) -> bool:
        """One expiring row in ``awa_leader`` (``try_lead.sql``): it lapses ``ttl_s`` after
        the leader's last renewal, so a dead leader is replaced within ``ttl_s``."""
        with self._transaction("taking the maintenance leadership") as tx:
            now = tx.now()
            params = {
                "name": MAINTENANCE_LEADERSHIP,
                "owner": owner,
                "now": micros(now),
                "expires_at": micros(now + timedelta(seconds=ttl_s)),
            }
            return tx.conn.execute(SQL["try_lead"], params).fetchone() is not None

    def _release_lead(self, owner: str) -> None:
        params = {"name": MAINTENANCE_LEADERSHIP, "owner": owner}
        self._change("releasing the maintenance leadership", "release_lead", params)

    def leader(self) -> str | None:
        """Who leads maintenance right now (for tests and diagnostics)."""
        params = {"name": MAINTENANCE_LEADERSHIP, "now": micros(self.clock.now())}
        rows = self._rows("reading the maintenance leader", "current_leader", params)
        return None if not rows else str(rows[0][0])

    # -- which kinds live workers handle (``awa.ports.TracksWorkers``) ----------------------------
    def _record_worker(self, owner: str, kinds: dict[str, tuple[str, ...]], ttl_s: float) -> None:
        with self._transaction("recording a worker") as tx:
            now = tx.now()
            tx.conn.execute(SQL["drop_lapsed_workers"], {"now": micros(now)})
            tx.conn.execute(SQL["forget_worker"], {"owner": owner})
            expires_at = micros(now + timedelta(seconds=ttl_s))
            tx.conn.executemany(
                SQL["record_worker"],
                [
                    {
                        "owner": owner,
                        "queue": q,
                        "kinds": dump_json(list(k)),
                        "expires_at": expires_at,
                    }
                    for q, k in kinds.items()
                ],
            )

    def _forget_worker(self, owner: str) -> None:
        self._change("forgetting a worker", "forget_worker", {"owner": owner})

    def _unhandled_kinds(self) -> list[UnhandledKind]:
        rows = self._rows(
            "finding unhandled kinds", "unhandled_kinds", {"now": micros(self.clock.now())}
        )
        return [
            UnhandledKind(q, k, n, read_time(oldest) or INSTANT_MIN) for q, k, n, oldest in rows
        ]

    # -- health and wake-ups --------------------------------------------------------------------
    def ping(self) -> None:
        """One read that checks the schema (``awa.ports.Probes``). On a file it reads on a
        short-lived connection of its own, not under the store's lock: a write holds that lock
        while it waits up to ``busy_timeout_s`` for another process's, and in WAL mode a reader
        waits for no writer. It waits at most ``PING_BUSY_TIMEOUT_S`` for a file locked
        outright, and never creates one."""
        if self.path == MEMORY:  # no other process: only this store's own calls hold its lock
            self._rows("pinging the database", "ping")
            return
        with translate_errors("pinging the database"):
            if self._closed:
                raise sqlite3.ProgrammingError("the store is closed")
            where = f"file:{quote(self.path)}?mode=rw"
            conn = sqlite3.connect(where, uri=True, timeout=PING_BUSY_TIMEOUT_S)
            try:
                migrations.check_schema(conn)
            finally:
                conn.close()

    @property
    def listening(self) -> bool:
        """Whether hints reach this store's listeners: from its own writes always, from
        other processes while the poller runs (a ``":memory:"`` file has no others). Read
        without the store's lock, which a write may hold for ``busy_timeout_s``."""
        poller = self._poller
        if not self._listeners or self._closed:
            return False
        return self.path == MEMORY or (poller is not None and poller.running)

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Hints of this store's writes at commit, and other processes' within
        ``hint_poll_interval_s`` (``hints.py``)."""
        check_listener(listener)
        with self._lock:
            self._listeners.append(listener)
            if self._poller is None and self.path != MEMORY and not self._closed:
                with translate_errors("starting the hint poller"):
                    self._poller = HintPoller(
                        self._connect, self._origin, self.hint_poll_interval_s, self._heard
                    )

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def _heard(self, event: Event) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(event)

    # -- operators ------------------------------------------------------------------------------
    def _get_job(self, job_id: int) -> Job | None:
        rows = self._rows("reading a job", "get_job", {"id": job_id})
        return job_from_row(rows[0]) if rows else None

    def _list_jobs(self, query: JobQuery) -> list[Job]:
        rows = self._rows("listing jobs", "list_jobs", list_params(query))
        return [job_from_row(row) for row in rows]

    def _list_job_summaries(
        self, query: JobQuery, home: Home, error_chars: int
    ) -> list[JobSummary]:
        params = summaries.summary_params(query, error_chars)
        with self._connection("listing jobs") as conn:
            return summaries.summaries_of(conn.execute(SQL[summaries.STATEMENTS[home]], params))

    def _discard_failed(self, queue: str | None, kind: str | None) -> int:
        params = {"queue": queue, "kind": kind}
        return self._change("discarding failed jobs", "discard_failed", params)

    def _count_jobs(self, state: JobState | None, kind: str | None, queue: str | None) -> int:
        params = {"state": state.value if state is not None else None, "kind": kind, "queue": queue}
        return int(self._rows("counting jobs", "count_jobs", params)[0][0])

    def _set_queue_paused(self, queue: str, paused: bool) -> None:
        with self._transaction("pausing a queue" if paused else "resuming a queue") as tx:
            tx.conn.execute(SQL["set_queue_paused"], {"queue": queue, "paused": int(paused)})
            if not paused:
                tx.events.append(JobsAvailable(queue))

    def _configure_queue(self, queue: str, change: SettingsChange) -> QueueSettings:
        with self._transaction("configuring a queue") as tx:
            row = tx.conn.execute(SQL["queue_settings_of"], {"queue": queue}).fetchone()
            settings = change.applied_to(QueueSettings(queue) if row is None else settings_of(row))
            params = settings_params(settings, new_rate=change.rate_limit is not UNCHANGED)
            stored = tx.conn.execute(SQL["configure_queue"], params).fetchone()
            if change.key_rate_limit is not UNCHANGED:  # a key rate given: every key starts full
                tx.conn.execute(SQL["delete_key_buckets"], {"queue": queue})
        return settings_of(stored)

    def queue_stats(self) -> list[QueueStats]:
        states, depth_rows, setting_rows = self._snapshot(
            "reading queue statistics", "queue_states", "dlq_depths", "queue_settings"
        )
        depths = dict(depth_rows)
        settings = {row[0]: settings_of(row) for row in setting_rows}
        counts: dict[str, dict[JobState, int]] = {}
        oldest: dict[str, datetime] = {}
        for queue, state, n, oldest_us in states:
            counts.setdefault(queue, {s: 0 for s in JobState})[STATES[state]] = n
            if oldest_us is not None:
                oldest[queue] = read_time(oldest_us) or INSTANT_MIN
        stats = []
        for name in sorted(set(counts) | set(depths) | set(settings)):
            setting = settings.get(name, QueueSettings(name))
            counted = counts.get(name, {s: 0 for s in JobState})
            stats.append(QueueStats.of(setting, counted, depths.get(name, 0), oldest.get(name)))
        return stats

    # -- the queue summary (``awa.ports.SummarizesQueues``) --------------------------------------
    def summarize_queues(self, *, window_s: float = ENDED_WINDOW_S) -> QueueSummary:
        check_seconds("summary window", window_s, allow_zero=False)
        with self._transaction("counting the queues") as tx:
            now = tx.now()
            window = {"now": micros(now), "since": micros(now - timedelta(seconds=window_s))}
            states = tx.conn.execute(SQL["count_queue_states"], window).fetchall()
            dead = tx.conn.execute(SQL["count_dead_letters"], window).fetchall()
            params = {
                "counted_at": micros(now),
                "window_s": float(window_s),
                "states": dump_json([list(row) for row in states]),
                "dead": dump_json([list(row) for row in dead]),
            }
            tx.conn.execute(SQL["keep_queue_summary"], params)
        summary = self.queue_summary()
        assert summary is not None, "the summary just written is gone"
        return summary

    def queue_summary(self) -> QueueSummary | None:
        summary, settings = self._snapshot(
            "reading the queue summary", "queue_summary", "queue_settings"
        )
        if not summary:
            return None
        counted_at, window_s, states, dead = summary[0]
        return build_summary(
            time_of(counted_at),
            float(window_s),
            (
                StateGroup(queue, STATES[state], n, read_time(oldest), ended)
                for queue, state, n, oldest, ended in load_json(states)
            ),
            (
                DlqGroup(queue, kind, reason, n, read_time(latest) or INSTANT_MIN, ended)
                for queue, kind, reason, n, latest, ended in load_json(dead)
            ),
            (settings_of(s) for s in settings),
        )

    # -- the dead-letter queue ------------------------------------------------------------------
    def _list_dlq(
        self, queue: str | None, kind: str | None, limit: int, before_id: int | None
    ) -> list[DlqEntry]:
        params = {"queue": queue, "kind": kind, "limit": limit, "before_id": before_id}
        rows = self._rows("listing the dead-letter queue", "list_dlq", params)
        return [dlq_entry_from_row(row) for row in rows]

    def _get_dlq_entry(self, job_id: int) -> DlqEntry | None:
        rows = self._rows("reading a dead-letter entry", "get_dlq_entry", {"id": job_id})
        return dlq_entry_from_row(rows[0]) if rows else None

    def _purge_dlq(self, queue: str | None, kind: str | None) -> int:
        params = {"queue": queue, "kind": kind}
        return self._change("purging the dead-letter queue", "purge_dlq", params)

    def _purge_dlq_job(self, job_id: int) -> bool:
        return self._change("purging a dead-letter entry", "delete_dead_letter", {"id": job_id}) > 0

    # -- periodic schedules ---------------------------------------------------------------------
    def list_schedules(self) -> list[ScheduleRecord]:
        return [schedule_from_row(r) for r in self._rows("listing schedules", "list_schedules")]

    def _upcoming_schedules(self, limit: int) -> tuple[datetime, list[ScheduleRecord]]:
        now = self.clock.now()
        rows = self._rows("reading the schedules", "upcoming_schedules", {"limit": limit})
        return now, [schedule_from_row(row) for row in rows]

    def _remove_schedule(self, name: str) -> bool:
        return self._change("removing a schedule", "remove_schedule", {"name": name}) > 0


def _use_wal(conn: sqlite3.Connection, busy_timeout_s: float) -> None:
    """Switch the file to WAL. Processes opening a new file at once race for it, and SQLite
    answers the loser "database is locked" at once, without its busy handler (which could
    deadlock there), so this waits and tries again for up to the busy timeout."""
    give_up = time.monotonic() + busy_timeout_s
    pause_s = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= give_up:
                raise
        time.sleep(pause_s)
        pause_s = min(pause_s * 2, 0.05)
