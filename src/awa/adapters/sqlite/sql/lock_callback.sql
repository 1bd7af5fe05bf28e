-- Purpose: the job whose pending callback this is, with its queue's dead-letter setting.
-- Parameters: callback_id. Transition: none. Index: jobs_callback_id_idx.
SELECT {j.job_columns}, coalesce(q.dlq_enabled, 0)
FROM awa_jobs AS j LEFT JOIN awa_queues AS q ON q.queue = j.queue
WHERE j.callback_id = :callback_id
