-- Purpose: retention: delete up to `limit` terminal jobs (outside the dead-letter queue)
--   finalized before now - older_than; the row count is the answer.
-- Parameters: now (timestamptz, NULL = the database clock), older_than interval, limit int.
-- Transition: none of the table's (terminal rows leave the store; DLQ entries are
--   expire_dlq.sql's).
-- Index: jobs_finished_idx (finalized_at, id) WHERE state IN (completed, failed, cancelled).
--   Bounded by LIMIT; SKIP LOCKED so it never waits on (or deadlocks with) an operator retry
--   holding a row; the DELETE re-checks the state.
WITH t AS (
    SELECT coalesce(%(now)s::timestamptz, now()) - %(older_than)s::interval AS cutoff
), expired AS (
    SELECT j.id
    FROM awa.jobs AS j, t
    WHERE j.state IN ('completed', 'failed', 'cancelled') AND j.finalized_at < t.cutoff
    ORDER BY j.finalized_at, j.id
    LIMIT %(limit)s
    FOR UPDATE OF j SKIP LOCKED
)
DELETE FROM awa.jobs AS j
USING expired
WHERE j.id = expired.id AND j.state IN ('completed', 'failed', 'cancelled')
