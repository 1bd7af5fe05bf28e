-- Purpose: every queue's settings. Parameters: none.
SELECT queue, paused, dlq_enabled, finished_retention_us, dlq_retention_us, failed_retention_us
FROM awa_queues
