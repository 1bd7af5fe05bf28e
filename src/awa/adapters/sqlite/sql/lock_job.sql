-- Purpose: one job outside the dead-letter queue, with its queue's dead-letter setting.
-- Parameters: id. Transition: none (the caller decides).
SELECT {j.job_columns}, coalesce(q.dlq_enabled, 0)
FROM awa_jobs AS j LEFT JOIN awa_queues AS q ON q.queue = j.queue
WHERE j.id = :id
