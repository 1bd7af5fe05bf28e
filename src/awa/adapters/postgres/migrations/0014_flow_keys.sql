-- Migration 0014: keyed flow control, per concurrency key and per ordering key.
--
-- concurrency_key, ordering_key: a job's keys (awa.domain.flow: NULL or 1..128 characters,
-- which the CHECKs repeat), on every row that holds a whole job: awa.jobs (added to the
-- partitioned parent, so both partitions get them), awa.dlq (a dead letter keeps its job whole
-- and restore puts it back) and awa.schedules (the template each fire inserts).
--
-- On awa.queues: key_concurrency_limit, key_rate_per_second and key_rate_burst, the limits
-- each concurrency key of the queue gets apart (CHECKs at the domain's bounds, as 0013's, the
-- rate pair both or neither); turn_cursor and turn_taken, the key whose turn came last in a
-- claim of a keyed queue (NULL is a valid cursor: the jobs without a key), so the next claim's
-- turns start after it (awa.domain.flow_turns) and one big key cannot take every claim.
--
-- awa.flow_key_buckets: each key's rate bucket as the last claim left it (a key without a row
-- is full, as a queue's NULL rate_tokens); written by claim_granted.sql under the queue's row
-- lock (lock_queue_flow.sql), emptied for a queue by configure_queue.sql whenever its key rate
-- is given.
--
-- Indexes, each named per partition and attached to one on awa.jobs (as in 0010 and 0013):
-- - jobs_ordering_idx (queue, ordering_key, id) over the unfinished jobs with an ordering key:
--   the ordering filter (claim.sql) asks whether a lower id of the same key is unfinished, one
--   index descent per candidate that has an ordering key, none for the others.
-- - jobs_ordering_live_idx (queue, ordering_key) over the live attempts with an ordering key:
--   whether an attempt of the key is live, without stepping over its unfinished followers (a
--   key with 10,000 queued jobs would read them all through jobs_ordering_idx). It holds the
--   running and parked attempts only, so its writes are bounded by the attempts, not the jobs.
-- - jobs_key_claim_idx (queue, concurrency_key, priority, run_at, id) over the runnable jobs
--   with a concurrency key: the keyed window (flow_candidates_keyed.sql) steps from one key to
--   the next and reads each key's first jobs in claim order.
-- Unfinished jobs are always hot (awa.job_home), so awa.jobs_done's copies stay empty and cost
-- its writes one predicate test; jobs without keys are in none of them.
--
-- awa.jobs.concurrency_key and awa.queues.turn_cursor compare in code-point order (COLLATE
-- "C"), the order Python gives the keys and the domain takes their turns in, whatever the
-- database's own collation: jobs_key_claim_idx then holds the keys in turn order, and a claim
-- walks them from the cursor and stops (flow_candidates_turns.sql).
--
-- The job columns are added without a default (no table rewrite). Their CHECKs on awa.jobs and
-- awa.dlq are NOT VALID: a CHECK added as valid reads every existing row, a day of finished
-- jobs in awa.jobs_done, under the ACCESS EXCLUSIVE lock ADD COLUMN holds until the migration
-- commits, only to find the NULL every existing row has in a column just added. NOT VALID
-- still checks every row written from now on. The indexes are built under a SHARE lock on each
-- partition, reading awa.jobs_hot (the work in progress) once each (docs/postgres.md, "Schema
-- 0014").

ALTER TABLE awa.jobs
    ADD COLUMN concurrency_key text COLLATE "C",
    ADD COLUMN ordering_key text;
ALTER TABLE awa.jobs
    ADD CONSTRAINT jobs_concurrency_key_length
        CHECK (char_length(concurrency_key) BETWEEN 1 AND 128) NOT VALID,
    ADD CONSTRAINT jobs_ordering_key_length
        CHECK (char_length(ordering_key) BETWEEN 1 AND 128) NOT VALID;

ALTER TABLE awa.dlq
    ADD COLUMN concurrency_key text,
    ADD COLUMN ordering_key text,
    ADD CONSTRAINT dlq_concurrency_key_length
        CHECK (char_length(concurrency_key) BETWEEN 1 AND 128) NOT VALID,
    ADD CONSTRAINT dlq_ordering_key_length
        CHECK (char_length(ordering_key) BETWEEN 1 AND 128) NOT VALID;

ALTER TABLE awa.schedules
    ADD COLUMN concurrency_key text,
    ADD COLUMN ordering_key text,
    ADD CONSTRAINT schedules_concurrency_key_length
        CHECK (char_length(concurrency_key) BETWEEN 1 AND 128),
    ADD CONSTRAINT schedules_ordering_key_length
        CHECK (char_length(ordering_key) BETWEEN 1 AND 128);

ALTER TABLE awa.queues
    ADD COLUMN key_concurrency_limit int,
    ADD COLUMN key_rate_per_second double precision,
    ADD COLUMN key_rate_burst int,
    ADD COLUMN turn_cursor text COLLATE "C",
    ADD COLUMN turn_taken boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT queues_key_concurrency_limit_range
        CHECK (key_concurrency_limit BETWEEN 1 AND 1000000),
    ADD CONSTRAINT queues_key_rate_per_second_range
        CHECK (key_rate_per_second BETWEEN 0.000001 AND 1000000),
    ADD CONSTRAINT queues_key_rate_burst_range CHECK (key_rate_burst BETWEEN 1 AND 1000000),
    ADD CONSTRAINT queues_key_rate_limit_whole
        CHECK ((key_rate_per_second IS NULL) = (key_rate_burst IS NULL)),
    -- a cursor is a key's (or NULL, the key-less jobs'), and is one only once a turn was taken
    ADD CONSTRAINT queues_turn_cursor_length CHECK (char_length(turn_cursor) BETWEEN 1 AND 128),
    ADD CONSTRAINT queues_turn_cursor_taken CHECK (turn_cursor IS NULL OR turn_taken);

CREATE TABLE awa.flow_key_buckets (
    queue      text             NOT NULL,
    key        text             NOT NULL,
    tokens     double precision NOT NULL,
    updated_at timestamptz      NOT NULL,
    PRIMARY KEY (queue, key),
    CONSTRAINT flow_key_buckets_key_length CHECK (char_length(key) BETWEEN 1 AND 128),
    -- the burst it is bounded by lives on awa.queues; a bucket is never below empty
    CONSTRAINT flow_key_buckets_tokens_range CHECK (tokens >= 0)
);

CREATE INDEX jobs_hot_ordering_idx ON awa.jobs_hot (queue, ordering_key, id)
    WHERE ordering_key IS NOT NULL
      AND state IN ('scheduled', 'available', 'retryable', 'running', 'waiting_external');
CREATE INDEX jobs_done_ordering_idx ON awa.jobs_done (queue, ordering_key, id)
    WHERE ordering_key IS NOT NULL
      AND state IN ('scheduled', 'available', 'retryable', 'running', 'waiting_external');
CREATE INDEX jobs_ordering_idx ON awa.jobs (queue, ordering_key, id)
    WHERE ordering_key IS NOT NULL
      AND state IN ('scheduled', 'available', 'retryable', 'running', 'waiting_external');

CREATE INDEX jobs_hot_ordering_live_idx ON awa.jobs_hot (queue, ordering_key)
    WHERE ordering_key IS NOT NULL AND state IN ('running', 'waiting_external');
CREATE INDEX jobs_done_ordering_live_idx ON awa.jobs_done (queue, ordering_key)
    WHERE ordering_key IS NOT NULL AND state IN ('running', 'waiting_external');
CREATE INDEX jobs_ordering_live_idx ON awa.jobs (queue, ordering_key)
    WHERE ordering_key IS NOT NULL AND state IN ('running', 'waiting_external');

CREATE INDEX jobs_hot_key_claim_idx ON awa.jobs_hot (queue, concurrency_key, priority, run_at, id)
    WHERE concurrency_key IS NOT NULL AND state IN ('available', 'scheduled', 'retryable');
CREATE INDEX jobs_done_key_claim_idx ON awa.jobs_done (queue, concurrency_key, priority, run_at, id)
    WHERE concurrency_key IS NOT NULL AND state IN ('available', 'scheduled', 'retryable');
CREATE INDEX jobs_key_claim_idx ON awa.jobs (queue, concurrency_key, priority, run_at, id)
    WHERE concurrency_key IS NOT NULL AND state IN ('available', 'scheduled', 'retryable');
