-- Purpose: delete failed and cancelled jobs (outside the dead-letter queue) past their
--   queue's failed retention (`older_than` where the queue has none), oldest finalized_at
--   first (awa.domain.retention: Retention.FAILED).
-- Parameters: now, older_than (us), limit. Transition: none (retention).
-- Index: jobs_failed_idx (its WHERE is this statement's state term, word for word).
DELETE FROM awa_jobs WHERE id IN (
    SELECT j.id FROM awa_jobs AS j LEFT JOIN awa_queues AS q ON q.queue = j.queue
    WHERE j.state IN ('failed', 'cancelled')
      AND j.finalized_at < :now - coalesce(q.failed_retention_us, :older_than)
    ORDER BY j.finalized_at, j.id
    LIMIT :limit)
