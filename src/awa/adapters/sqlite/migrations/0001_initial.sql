-- Migration 0001: the awa schema on SQLite. Jobs, the dead-letter queue, queue settings,
-- leadership, schedules, worker records, the queue summary and the hint log.
--
-- The same tables as the PostgreSQL adapter, prefixed awa_ (SQLite has no schemas). Times are
-- INTEGER microseconds since the Unix epoch, UTC, so they compare and order as numbers and
-- round-trip a Python datetime exactly; JSON values are TEXT. Applied by
-- awa.adapters.sqlite.migrations.migrate() inside BEGIN IMMEDIATE, which records the version
-- in awa_schema_version.

CREATE TABLE awa_jobs (
    -- AUTOINCREMENT: an id is never handed out twice, even after its job was deleted, so ids
    -- stay unique across awa_jobs and awa_dlq (a job keeps its id when it moves)
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    kind                TEXT    NOT NULL,
    queue               TEXT    NOT NULL,
    args                TEXT    NOT NULL DEFAULT '{}',
    state               TEXT    NOT NULL,
    priority            INTEGER NOT NULL,
    attempt             INTEGER NOT NULL DEFAULT 0,
    max_attempts        INTEGER NOT NULL,
    run_lease           INTEGER NOT NULL DEFAULT 0,
    run_at              INTEGER NOT NULL,
    created_at          INTEGER NOT NULL,
    tags                TEXT    NOT NULL DEFAULT '[]',
    metadata            TEXT    NOT NULL DEFAULT '{}',
    errors              TEXT    NOT NULL DEFAULT '[]',
    attempted_at        INTEGER,
    heartbeat_at        INTEGER,
    deadline_at         INTEGER,
    finalized_at        INTEGER,
    progress            TEXT,
    callback_id         TEXT,
    callback_timeout_at INTEGER,
    callback_result     TEXT,
    unique_key          TEXT,
    unique_states       INTEGER,
    CONSTRAINT jobs_state_valid CHECK (state IN ('scheduled', 'available', 'running',
        'waiting_external', 'retryable', 'completed', 'failed', 'cancelled')),
    CONSTRAINT jobs_priority_range CHECK (priority BETWEEN 1 AND 4),
    CONSTRAINT jobs_max_attempts_range CHECK (max_attempts BETWEEN 1 AND 1000),
    CONSTRAINT jobs_finalized_iff_terminal CHECK (
        (state IN ('completed', 'failed', 'cancelled')) = (finalized_at IS NOT NULL)),
    CONSTRAINT jobs_callback_only_live CHECK (
        callback_id IS NULL OR state IN ('running', 'waiting_external')),
    CONSTRAINT jobs_unique_key_with_states CHECK ((unique_key IS NULL) = (unique_states IS NULL))
);

-- claim_candidates.sql: runnable jobs of one queue, per priority, in (run_at, id) order
CREATE INDEX jobs_claim_idx ON awa_jobs (queue, priority, run_at, id)
    WHERE state IN ('available', 'scheduled', 'retryable');
-- due_jobs.sql: scheduled and retryable jobs in (run_at, id) order
CREATE INDEX jobs_due_idx ON awa_jobs (run_at, id)
    WHERE state IN ('scheduled', 'retryable');
-- live_jobs.sql: the (small) set of live attempts, for rescue
CREATE INDEX jobs_live_idx ON awa_jobs (id)
    WHERE state IN ('running', 'waiting_external');
-- delete_finished.sql: terminal jobs in (finalized_at, id) order
CREATE INDEX jobs_finished_idx ON awa_jobs (finalized_at, id)
    WHERE state IN ('completed', 'failed', 'cancelled');
-- lock_callback.sql: one pending callback id belongs to one job
CREATE UNIQUE INDEX jobs_callback_id_idx ON awa_jobs (callback_id)
    WHERE callback_id IS NOT NULL;
-- lock_unique_holder.sql: who holds a unique key. The predicate is
-- awa.domain.unique.holds_unique_key: the job's state is among its unique states, each state
-- a bit in the order of awa.domain.JobState (the same mask as the PostgreSQL adapter's). Two
-- jobs can never hold one key, whichever processes write them.
CREATE UNIQUE INDEX jobs_unique_key_idx ON awa_jobs (unique_key)
    WHERE unique_key IS NOT NULL AND unique_states & (CASE state
        WHEN 'scheduled' THEN 1 WHEN 'available' THEN 2 WHEN 'running' THEN 4
        WHEN 'waiting_external' THEN 8 WHEN 'retryable' THEN 16 WHEN 'completed' THEN 32
        WHEN 'failed' THEN 64 WHEN 'cancelled' THEN 128 END) <> 0;

-- A job is in exactly one home: awa_jobs or awa_dlq.
CREATE TABLE awa_dlq (
    id                  INTEGER PRIMARY KEY,
    kind                TEXT    NOT NULL,
    queue               TEXT    NOT NULL,
    args                TEXT    NOT NULL,
    state               TEXT    NOT NULL,
    priority            INTEGER NOT NULL,
    attempt             INTEGER NOT NULL,
    max_attempts        INTEGER NOT NULL,
    run_lease           INTEGER NOT NULL,
    run_at              INTEGER NOT NULL,
    created_at          INTEGER NOT NULL,
    tags                TEXT    NOT NULL,
    metadata            TEXT    NOT NULL,
    errors              TEXT    NOT NULL,
    attempted_at        INTEGER,
    heartbeat_at        INTEGER,
    deadline_at         INTEGER,
    finalized_at        INTEGER,
    progress            TEXT,
    callback_id         TEXT,
    callback_timeout_at INTEGER,
    callback_result     TEXT,
    unique_key          TEXT,
    unique_states       INTEGER,
    dlq_reason          TEXT    NOT NULL,
    dlq_at              INTEGER NOT NULL,
    CONSTRAINT dlq_only_failed CHECK (state = 'failed'),
    CONSTRAINT dlq_reason_given CHECK (trim(dlq_reason) <> '')
);

-- lock_dead_letters.sql, purge_dlq.sql, expire_dlq.sql
CREATE INDEX dlq_queue_kind_idx ON awa_dlq (queue, kind, dlq_at, id);
CREATE INDEX dlq_at_idx ON awa_dlq (dlq_at, id);

-- Per-queue settings. A queue without a row is unpaused with the dead-letter queue disabled
-- and no retention of its own (microseconds; NULL: the leader's default applies).
CREATE TABLE awa_queues (
    queue                 TEXT    PRIMARY KEY,
    paused                INTEGER NOT NULL DEFAULT 0,
    dlq_enabled           INTEGER NOT NULL DEFAULT 0,
    finished_retention_us INTEGER CHECK (finished_retention_us > 0),
    dlq_retention_us      INTEGER CHECK (dlq_retention_us > 0)
) WITHOUT ROWID;

-- One expiring row per leadership name (try_lead.sql): the leader renews it on every
-- maintenance pass; when the leader dies the row expires and another process takes it.
CREATE TABLE awa_leader (
    name       TEXT    PRIMARY KEY,
    owner      TEXT    NOT NULL CHECK (trim(owner) <> ''),
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

-- Periodic schedules (awa.domain.periodic.ScheduleRecord); fire_schedule.sql moves
-- next_fire_at on from the value the plan read (a compare-and-set) in the transaction that
-- inserts the fire's jobs.
CREATE TABLE awa_schedules (
    name               TEXT    PRIMARY KEY,
    cron               TEXT    NOT NULL,
    timezone           TEXT    NOT NULL,
    missed_fire_policy TEXT    NOT NULL CHECK (missed_fire_policy IN ('coalesce', 'catch_up')),
    kind               TEXT    NOT NULL,
    queue              TEXT    NOT NULL,
    args               TEXT    NOT NULL,
    priority           INTEGER NOT NULL,
    max_attempts       INTEGER NOT NULL,
    tags               TEXT    NOT NULL,
    metadata           TEXT    NOT NULL,
    unique_options     TEXT,
    paused             INTEGER NOT NULL DEFAULT 0,
    next_fire_at       INTEGER NOT NULL,
    last_fire_at       INTEGER,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL
) WITHOUT ROWID;

-- upcoming_schedules.sql: active schedules, earliest next fire first
CREATE INDEX schedules_next_fire_idx ON awa_schedules (next_fire_at, name) WHERE paused = 0;

-- Which kinds live workers handle, per queue (record_worker.sql, unhandled_kinds.sql).
CREATE TABLE awa_workers (
    owner      TEXT    NOT NULL,
    queue      TEXT    NOT NULL,
    kinds      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (owner, queue)
) WITHOUT ROWID;

-- The queue summary: one row, the groups the leader last counted, as JSON arrays.
CREATE TABLE awa_queue_summary (
    only_row   INTEGER PRIMARY KEY CHECK (only_row = 1),
    counted_at INTEGER NOT NULL,
    window_s   REAL    NOT NULL CHECK (window_s > 0),
    states     TEXT    NOT NULL,
    dead       TEXT    NOT NULL
);

-- Hints for other processes (SQLite has no LISTEN): a writer adds a row in the transaction
-- that made work available, cancelled an attempt or answered a callback; listeners read the
-- rows after the last one they saw, only once PRAGMA data_version says something committed.
-- `origin` names the store that wrote it (its own listeners heard it at commit). Old rows are
-- pruned by id (prune_hints.sql): a listener that fell that far behind lost hints, and polls.
CREATE TABLE awa_hints (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    origin    TEXT    NOT NULL,
    kind      TEXT    NOT NULL CHECK (kind IN ('available', 'cancel', 'callback')),
    queue     TEXT,
    job_id    INTEGER,
    run_lease INTEGER
);
