-- Migration 0010: finished jobs live apart from the work in progress.
--
-- awa.jobs becomes a table partitioned by a job's home, awa.job_home(): `hot` holds the jobs a
-- worker or maintainer can still touch (scheduled, available, running, waiting_external,
-- retryable) and the finished ones that still hold their unique key; `done` holds every other
-- finished job until retention deletes it. Claims, completions, heartbeats, rescues and
-- autovacuum then work on a table the size of the live work, not of a day of history: in the
-- hour at 3,500 jobs/s the single table grew to 12.6 M rows, and its vacuums, dead claim-index
-- entries and completion statements grew with it (docs/performance.md, "An hour of steady
-- load").
--
-- Why a finished key holder stays hot: a unique index covers one table, and a key must have at
-- most one holder across live and finished states (awa.domain.unique). So every holder lives
-- in awa.jobs_hot, whose jobs_unique_key_idx is the arbiter, and awa.jobs_done holds none.
--
-- Readers keep reading awa.jobs, which is both partitions. A write that changes a job's home
-- (finishing it, retrying a finished job) deletes the row and inserts it anew (write_jobs.sql,
-- complete_running.sqlpart): an UPDATE that moved the row between partitions would make any
-- transaction waiting on its lock fail with a serialization error instead of seeing it gone.
-- awa.jobs_done's CHECK on the state lets the planner leave it out of every query for live
-- states (claims, rescues, promotion), whatever the plan cache holds.
--
-- The upgrade copies the table once under an ACCESS EXCLUSIVE lock: inserts and workers wait
-- for it: 4.6–6.1 s for a million small jobs on the benchmark machine (docs/postgres.md,
-- "Upgrading to 0010").

CREATE FUNCTION awa.job_home(state text, unique_key text, unique_states smallint) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN state IN ('completed', 'failed', 'cancelled')
             AND (unique_key IS NULL OR unique_states & awa.state_bit(state) = 0)
        THEN 'done'
        ELSE 'hot'
    END
$$;

CREATE TABLE awa.jobs_new (LIKE awa.jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY)
    PARTITION BY LIST (awa.job_home(state, unique_key, unique_states));

-- hot: every job is inserted here, updated at least once and deleted when it finishes, so its
-- dead rows come at about three times the job rate; vacuum early and fast (as 0009 set for the
-- single table), and leave room on each page for a row's next version.
CREATE TABLE awa.jobs_hot PARTITION OF awa.jobs_new FOR VALUES IN ('hot') WITH (
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_limit = 2000
);

-- done: appended to by finishes, deleted from by retention in (finalized_at, id) order. Its
-- vacuum only has retention's deletions to clean up and nothing waits on it; the server's
-- defaults suit it.
CREATE TABLE awa.jobs_done PARTITION OF awa.jobs_new (
    CONSTRAINT jobs_done_finished CHECK (state IN ('completed', 'failed', 'cancelled'))
) FOR VALUES IN ('done');

INSERT INTO awa.jobs_new SELECT * FROM awa.jobs;

-- the new identity carries on where the old one stopped (ids also live on in awa.dlq)
SELECT setval(pg_get_serial_sequence('awa.jobs_new', 'id'),
              greatest(s.last_value, 1), s.is_called)
FROM awa.jobs_id_seq AS s;

DROP TABLE awa.jobs;
ALTER TABLE awa.jobs_new RENAME TO jobs;
ALTER SEQUENCE awa.jobs_new_id_seq RENAME TO jobs_id_seq;
-- New jobs are written into awa.jobs_hot directly (a new job is never finished), where
-- PostgreSQL 15 does not apply the parent's identity: the same sequence, as a default.
ALTER TABLE awa.jobs_hot ALTER COLUMN id SET DEFAULT nextval('awa.jobs_id_seq');

-- A partitioned table's primary key would have to include the partition key; ids are unique
-- because the identity is their only source (as in 0001 for awa.dlq).
ALTER TABLE awa.jobs_hot ADD CONSTRAINT jobs_hot_pkey PRIMARY KEY (id);
ALTER TABLE awa.jobs_done ADD CONSTRAINT jobs_done_pkey PRIMARY KEY (id);

-- Indexes of 0001 and 0002, named per partition (plans show these names) and attached to one
-- index on awa.jobs each. awa.jobs_done's copies of the live-state ones stay empty.
CREATE INDEX jobs_hot_claim_idx ON awa.jobs_hot (queue, priority, run_at, id)
    WHERE state IN ('available', 'scheduled', 'retryable');
CREATE INDEX jobs_done_claim_idx ON awa.jobs_done (queue, priority, run_at, id)
    WHERE state IN ('available', 'scheduled', 'retryable');
CREATE INDEX jobs_claim_idx ON awa.jobs (queue, priority, run_at, id)
    WHERE state IN ('available', 'scheduled', 'retryable');

CREATE INDEX jobs_hot_due_idx ON awa.jobs_hot (run_at, id)
    WHERE state IN ('scheduled', 'retryable');
CREATE INDEX jobs_done_due_idx ON awa.jobs_done (run_at, id)
    WHERE state IN ('scheduled', 'retryable');
CREATE INDEX jobs_due_idx ON awa.jobs (run_at, id)
    WHERE state IN ('scheduled', 'retryable');

CREATE INDEX jobs_hot_live_idx ON awa.jobs_hot (id)
    WHERE state IN ('running', 'waiting_external');
CREATE INDEX jobs_done_live_idx ON awa.jobs_done (id)
    WHERE state IN ('running', 'waiting_external');
CREATE INDEX jobs_live_idx ON awa.jobs (id)
    WHERE state IN ('running', 'waiting_external');

CREATE INDEX jobs_hot_finished_idx ON awa.jobs_hot (finalized_at, id)
    WHERE state IN ('completed', 'failed', 'cancelled');
CREATE INDEX jobs_done_finished_idx ON awa.jobs_done (finalized_at, id)
    WHERE state IN ('completed', 'failed', 'cancelled');
CREATE INDEX jobs_finished_idx ON awa.jobs (finalized_at, id)
    WHERE state IN ('completed', 'failed', 'cancelled');

-- Unique indexes hold within the hot partition, where every job they constrain lives: a
-- pending callback belongs to a live job, a unique key's holder is hot by awa.job_home.
CREATE UNIQUE INDEX jobs_callback_id_idx ON awa.jobs_hot (callback_id)
    WHERE callback_id IS NOT NULL;
CREATE UNIQUE INDEX jobs_unique_key_idx ON awa.jobs_hot (unique_key)
    WHERE unique_key IS NOT NULL AND unique_states & awa.state_bit(state) <> 0;
