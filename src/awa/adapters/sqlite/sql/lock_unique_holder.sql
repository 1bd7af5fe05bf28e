-- Purpose: the job that holds a unique key (awa.domain.unique.holds_unique_key).
-- Parameters: key. Transition: none.
-- Index: jobs_unique_key_idx: the predicate is the index's, written the same way.
SELECT {j.job_columns}, coalesce(q.dlq_enabled, 0)
FROM awa_jobs AS j LEFT JOIN awa_queues AS q ON q.queue = j.queue
WHERE j.unique_key = :key AND j.unique_key IS NOT NULL AND j.unique_states & (CASE j.state
        WHEN 'scheduled' THEN 1 WHEN 'available' THEN 2 WHEN 'running' THEN 4
        WHEN 'waiting_external' THEN 8 WHEN 'retryable' THEN 16 WHEN 'completed' THEN 32
        WHEN 'failed' THEN 64 WHEN 'cancelled' THEN 128 END) <> 0
