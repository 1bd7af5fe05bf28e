-- Purpose: delete completed jobs past their queue's finished retention (`older_than` where
--   the queue has none), oldest finalized_at first (awa.domain.retention: Retention.COMPLETED).
-- Parameters: now, older_than (us), limit. Transition: none (retention).
-- Index: jobs_completed_idx (its WHERE is this statement's state term, word for word).
DELETE FROM awa_jobs WHERE id IN (
    SELECT j.id FROM awa_jobs AS j LEFT JOIN awa_queues AS q ON q.queue = j.queue
    WHERE j.state = 'completed'
      AND j.finalized_at < :now - coalesce(q.finished_retention_us, :older_than)
    ORDER BY j.finalized_at, j.id
    LIMIT :limit)
