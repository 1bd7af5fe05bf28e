-- Purpose: retention: delete up to `limit` failed and cancelled jobs (outside the dead-letter
--   queue) finalized longer ago than their queue's failed_retention (older_than for a queue
--   without one), the states of awa.domain.retention's Retention.FAILED; the row count is
--   the answer.
-- Parameters: now (timestamptz, NULL = the database clock), older_than interval, limit int.
-- Transition: none of the table's (terminal rows leave the store; DLQ entries are
--   expire_dlq.sql's).
-- Index: jobs_failed_idx (finalized_at, id) WHERE state IN (failed, cancelled) (0012), as
--   delete_completed.sql reads jobs_completed_idx: merged across the partitions, scanned up
--   to the latest cutoff of any queue, each row held to its own queue's. Bounded by LIMIT;
--   SKIP LOCKED; the DELETE re-checks the state.
WITH expired AS (
    SELECT j.id
    FROM awa.jobs AS j
    LEFT JOIN awa.queues AS q ON q.queue = j.queue
    WHERE j.state IN ('failed', 'cancelled')
      AND j.finalized_at < coalesce(%(now)s::timestamptz, now())
            - least(%(older_than)s::interval, (SELECT min(failed_retention) FROM awa.queues))
      AND j.finalized_at < coalesce(%(now)s::timestamptz, now())
            - coalesce(q.failed_retention, %(older_than)s::interval)
    ORDER BY j.finalized_at, j.id
    LIMIT %(limit)s
    FOR UPDATE OF j SKIP LOCKED
)
DELETE FROM awa.jobs AS j
USING expired
WHERE j.id = expired.id AND j.state IN ('failed', 'cancelled')
