-- Purpose: every live attempt in id order, with its queue's dead-letter setting; rescue asks
--   the domain (awa.domain.rescue.rescue_cause) which of them to end.
-- Parameters: none. Index: jobs_live_idx (live attempts are few: one per running handler).
SELECT {j.job_columns}, coalesce(q.dlq_enabled, 0)
FROM awa_jobs AS j LEFT JOIN awa_queues AS q ON q.queue = j.queue
WHERE j.state IN ('running', 'waiting_external')
ORDER BY j.id
