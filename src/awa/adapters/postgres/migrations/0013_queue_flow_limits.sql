-- Migration 0013: a queue's fleet-wide flow limits, stored with its other settings.
--
-- concurrency_limit: at most this many attempts of the queue live (running or
-- waiting_external) at once, across every worker; rate_per_second and rate_burst: the token
-- bucket every attempt of the queue starts from; NULL: no such limit (awa.domain.flow_limits,
-- whose bounds the CHECKs repeat). rate_tokens and rate_updated_at are the bucket as the last
-- claim left it (awa.domain.flow_buckets.Bucket); NULL: a full bucket, as configure_queue.sql
-- leaves it whenever the rate changes.
--
-- A claim of a limited queue locks its row here FOR UPDATE (lock_queue_flow.sql), counts the
-- queue's live attempts and takes tokens, then writes the bucket back in the same transaction
-- (docs/flow-control-design.md). The lock is the row's own: it ends with the transaction, so a
-- claimer that dies leaks nothing.
--
-- jobs_live_queue_idx lets that count read the queue's live attempts only, not the live
-- attempts of every queue (jobs_live_idx holds those by id). It is named per partition, as in
-- 0010, and attached to one index on awa.jobs: a live job is always hot (awa.job_home), so
-- awa.jobs_done's copy stays empty and costs its writes one predicate test.
--
-- The columns are added without a default (no table rewrite); the indexes are built under a
-- SHARE lock on each partition: inserts, claims and finishes wait while awa.jobs_hot is read
-- once (the work in progress only, not the finished jobs; docs/postgres.md, "Upgrading to
-- 0013").

ALTER TABLE awa.queues
    ADD COLUMN concurrency_limit int,
    ADD COLUMN rate_per_second double precision,
    ADD COLUMN rate_burst int,
    ADD COLUMN rate_tokens double precision,
    ADD COLUMN rate_updated_at timestamptz,
    ADD CONSTRAINT queues_concurrency_limit_range
        CHECK (concurrency_limit BETWEEN 1 AND 1000000),
    ADD CONSTRAINT queues_rate_per_second_range
        CHECK (rate_per_second BETWEEN 0.000001 AND 1000000),
    ADD CONSTRAINT queues_rate_burst_range CHECK (rate_burst BETWEEN 1 AND 1000000),
    ADD CONSTRAINT queues_rate_limit_whole
        CHECK ((rate_per_second IS NULL) = (rate_burst IS NULL)),
    -- a bucket belongs to a rate: stored whole (both values) or not at all, never above burst
    ADD CONSTRAINT queues_rate_bucket_whole
        CHECK ((rate_tokens IS NULL) = (rate_updated_at IS NULL)
               AND (rate_tokens IS NULL OR rate_per_second IS NOT NULL)),
    ADD CONSTRAINT queues_rate_tokens_range CHECK (rate_tokens BETWEEN 0 AND rate_burst);

-- `queue IS NOT NULL` is always true (the column is NOT NULL): it keeps the index to the
-- statements that name a queue (`queue = $1` proves it, bound or not). A statement asking for
-- the live states alone (complete_running.sqlpart, rescue_candidates.sql) cannot prove it, so
-- the planner cannot read this index whole for them, as it did when the statistics said no job
-- was running: complete_many then read every running job through it instead of its own ids
-- (tests/postgres/test_job_table_hygiene.py).
CREATE INDEX jobs_hot_live_queue_idx ON awa.jobs_hot (queue)
    WHERE state IN ('running', 'waiting_external') AND queue IS NOT NULL;
CREATE INDEX jobs_done_live_queue_idx ON awa.jobs_done (queue)
    WHERE state IN ('running', 'waiting_external') AND queue IS NOT NULL;
CREATE INDEX jobs_live_queue_idx ON awa.jobs (queue)
    WHERE state IN ('running', 'waiting_external') AND queue IS NOT NULL;
