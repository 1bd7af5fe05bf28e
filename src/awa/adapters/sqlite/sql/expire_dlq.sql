-- Purpose: delete dead-letter entries past their queue's dead-letter retention (`older_than`
--   where the queue has none), oldest dlq_at first.
-- Parameters: now, older_than (us), limit. Transition: none (retention). Index: dlq_at_idx.
DELETE FROM awa_dlq WHERE id IN (
    SELECT d.id FROM awa_dlq AS d LEFT JOIN awa_queues AS q ON q.queue = d.queue
    WHERE d.dlq_at < :now - coalesce(q.dlq_retention_us, :older_than)
    ORDER BY d.dlq_at, d.id
    LIMIT :limit)
