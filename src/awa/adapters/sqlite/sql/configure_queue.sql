-- Purpose: store each given setting of a queue (NULL: keep it) and return them all.
-- Parameters: queue, dlq_enabled (0, 1 or NULL), finished_retention_us, dlq_retention_us,
--   failed_retention_us.
INSERT INTO awa_queues (queue, dlq_enabled, finished_retention_us, dlq_retention_us,
                        failed_retention_us)
VALUES (:queue, coalesce(:dlq_enabled, 0), :finished_retention_us, :dlq_retention_us,
        :failed_retention_us)
ON CONFLICT (queue) DO UPDATE
SET dlq_enabled = coalesce(:dlq_enabled, dlq_enabled),
    finished_retention_us = coalesce(:finished_retention_us, finished_retention_us),
    dlq_retention_us = coalesce(:dlq_retention_us, dlq_retention_us),
    failed_retention_us = coalesce(:failed_retention_us, failed_retention_us)
RETURNING queue, paused, dlq_enabled, finished_retention_us, dlq_retention_us,
          failed_retention_us
