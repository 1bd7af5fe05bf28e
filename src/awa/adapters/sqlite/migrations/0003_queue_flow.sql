-- Migration 0003: a queue's fleet-wide flow limits and the token bucket of its rate limit.
--
-- concurrency_limit: the most live attempts (running, waiting_external) of the queue at once;
-- rate_per_second and rate_burst: its rate limit, both or neither (awa.domain.flow.RateLimit);
-- rate_tokens and rate_updated_at (microseconds): the bucket as the last claim left it, both
-- or neither, NULL reading as a full bucket (configure_queue clears it when the rate is set).
-- NULL limits: no limit. The bounds are awa.domain.flow_limits' (CONCURRENCY_LIMIT_MAX,
-- PER_SECOND_MIN, PER_SECOND_MAX, BURST_MAX; tests/sqlite/test_flow_schema.py holds them to
-- those constants). The domain rounds a bucket's tokens down and caps them at the burst, so
-- a stored bucket never holds more than rate_burst.
--
-- ADD COLUMN cannot add a table constraint; a column's CHECK may name the columns before it,
-- so each pair's both-or-neither rule sits on the pair's second column.
ALTER TABLE awa_queues ADD COLUMN concurrency_limit INTEGER
    CONSTRAINT queues_concurrency_limit_range CHECK (concurrency_limit BETWEEN 1 AND 1000000);
ALTER TABLE awa_queues ADD COLUMN rate_per_second REAL
    CONSTRAINT queues_rate_per_second_range CHECK (rate_per_second BETWEEN 0.000001 AND 1000000.0);
ALTER TABLE awa_queues ADD COLUMN rate_burst INTEGER
    CONSTRAINT queues_rate_burst_range CHECK (rate_burst BETWEEN 1 AND 1000000)
    CONSTRAINT queues_rate_pair CHECK ((rate_per_second IS NULL) = (rate_burst IS NULL));
ALTER TABLE awa_queues ADD COLUMN rate_tokens REAL
    CONSTRAINT queues_rate_tokens_range CHECK (
        rate_tokens IS NULL OR (rate_burst IS NOT NULL AND rate_tokens BETWEEN 0 AND rate_burst));
ALTER TABLE awa_queues ADD COLUMN rate_updated_at INTEGER
    CONSTRAINT queues_rate_bucket_pair CHECK ((rate_tokens IS NULL) = (rate_updated_at IS NULL));

-- live_attempts.sql: count one queue's live attempts (a claim of a limited queue does, inside
-- its write transaction) from the index alone: without state among its columns SQLite reads
-- each row to test the state again. jobs_live_idx, in id order over every queue, stays for
-- rescue.
CREATE INDEX jobs_live_queue_idx ON awa_jobs (queue, state)
    WHERE state IN ('running', 'waiting_external');
