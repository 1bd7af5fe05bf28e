-- Purpose: store a queue's settings as configure_queue made them (the core applied the change
--   to the settings read by queue_settings_of.sql in the same transaction) and return them;
--   paused is its own verb's (set_queue_paused.sql) and is left as it is, and so is the turn
--   cursor (a claim's).
-- Parameters: queue, dlq_enabled (0 or 1), finished_retention_us, dlq_retention_us,
--   failed_retention_us, concurrency_limit, rate_per_second, rate_burst,
--   key_concurrency_limit, key_rate_per_second, key_rate_burst (NULL: none), new_rate (1: the
--   rate limit was given, so its bucket starts full: NULL). A key_rate_limit given empties the
--   key buckets instead (delete_key_buckets.sql).
-- Columns: the part settings_columns.
INSERT INTO awa_queues (queue, dlq_enabled, finished_retention_us, dlq_retention_us,
                        failed_retention_us, concurrency_limit, rate_per_second, rate_burst,
                        key_concurrency_limit, key_rate_per_second, key_rate_burst)
VALUES (:queue, :dlq_enabled, :finished_retention_us, :dlq_retention_us, :failed_retention_us,
        :concurrency_limit, :rate_per_second, :rate_burst,
        :key_concurrency_limit, :key_rate_per_second, :key_rate_burst)
ON CONFLICT (queue) DO UPDATE
SET dlq_enabled = excluded.dlq_enabled,
    finished_retention_us = excluded.finished_retention_us,
    dlq_retention_us = excluded.dlq_retention_us,
    failed_retention_us = excluded.failed_retention_us,
    concurrency_limit = excluded.concurrency_limit,
    rate_per_second = excluded.rate_per_second,
    rate_burst = excluded.rate_burst,
    rate_tokens = CASE WHEN :new_rate THEN NULL ELSE rate_tokens END,
    rate_updated_at = CASE WHEN :new_rate THEN NULL ELSE rate_updated_at END,
    key_concurrency_limit = excluded.key_concurrency_limit,
    key_rate_per_second = excluded.key_rate_per_second,
    key_rate_burst = excluded.key_rate_burst
RETURNING {part:settings_columns}
