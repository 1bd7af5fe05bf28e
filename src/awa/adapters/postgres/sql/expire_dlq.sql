-- Purpose: retention: delete up to `limit` dead-letter entries that entered the DLQ longer
--   ago than their queue's dlq_retention (older_than for a queue without one); the row count
--   is the answer.
-- Parameters: now (timestamptz, NULL = the database clock), older_than interval, limit int.
-- Transition: row 21 (DLQ → ∅) by retention.
-- Index: dlq_at_idx (dlq_at, id), scanned up to the latest cutoff of any queue (as in
--   delete_finished.sql). Bounded by LIMIT; SKIP LOCKED so it never waits on a DLQ retry
--   holding an entry.
WITH expired AS (
    SELECT d.id
    FROM awa.dlq AS d
    LEFT JOIN awa.queues AS q ON q.queue = d.queue
    WHERE d.dlq_at < coalesce(%(now)s::timestamptz, now())
            - least(%(older_than)s::interval, (SELECT min(dlq_retention) FROM awa.queues))
      AND d.dlq_at < coalesce(%(now)s::timestamptz, now())
            - coalesce(q.dlq_retention, %(older_than)s::interval)
    ORDER BY d.dlq_at, d.id
    LIMIT %(limit)s
    FOR UPDATE OF d SKIP LOCKED
)
DELETE FROM awa.dlq AS d
USING expired
WHERE d.id = expired.id
