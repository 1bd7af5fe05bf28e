-- Purpose: retention: delete up to `limit` completed jobs finalized longer ago than their
--   queue's finished_retention (older_than for a queue without one), the states of
--   awa.domain.retention's Retention.COMPLETED; the row count is the answer.
-- Parameters: now (timestamptz, NULL = the database clock), older_than interval, limit int.
-- Transition: none of the table's (terminal rows leave the store).
-- Index: jobs_completed_idx (finalized_at, id) WHERE state = 'completed' (0012), one per
--   partition, merged (most completed jobs are awa.jobs_done's; finished key holders are
--   awa.jobs_hot's), scanned up to the latest cutoff of any queue (the shortest retention, an
--   InitPlan over the few rows of awa.queues); each row is then held to its own queue's
--   cutoff. The index holds no failed job, so the scan never steps over the failures kept
--   longer. Bounded by LIMIT; SKIP LOCKED so it never waits on (or deadlocks with) an
--   operator retry holding a row; the DELETE re-checks the state.
WITH expired AS (
    SELECT j.id
    FROM awa.jobs AS j
    LEFT JOIN awa.queues AS q ON q.queue = j.queue
    WHERE j.state = 'completed'
      AND j.finalized_at < coalesce(%(now)s::timestamptz, now())
            - least(%(older_than)s::interval, (SELECT min(finished_retention) FROM awa.queues))
      AND j.finalized_at < coalesce(%(now)s::timestamptz, now())
            - coalesce(q.finished_retention, %(older_than)s::interval)
    ORDER BY j.finalized_at, j.id
    LIMIT %(limit)s
    FOR UPDATE OF j SKIP LOCKED
)
DELETE FROM awa.jobs AS j
USING expired
WHERE j.id = expired.id AND j.state = 'completed'
