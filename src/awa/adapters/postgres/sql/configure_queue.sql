-- Purpose: store the settings given for a queue, leave the others as they are, and return
--   them all (a queue without settings gets its row, defaults for what is not given).
-- Parameters: queue text; dlq_enabled boolean, finished_retention interval, dlq_retention
--   interval, failed_retention interval, each NULL to leave that setting as it is;
--   concurrency_given boolean with concurrency_limit int, rate_given boolean with
--   rate_per_second float8 and rate_burst int, key_concurrency_given boolean with
--   key_concurrency_limit int, key_rate_given boolean with key_rate_per_second float8 and
--   key_rate_burst int: a flow limit is written only when given, and given as NULL it is
--   removed (the flag tells "leave it" from "remove it", which NULL alone cannot). A rate given
--   (changed, removed or the same again) resets the bucket to full: rate_tokens and
--   rate_updated_at NULL (a key rate given resets the key buckets: clear_key_buckets.sql, run
--   next in the same transaction; awa.adapters.core.SettingsChange).
-- Transition: none (queue setting); dlq_enabled decides row 19 for later failures, the
--   retentions delete_completed.sql, delete_failed.sql and expire_dlq.sql, the flow limits
--   every claim of the queue (lock_queue_flow.sql). A claim holding the queue's row lock makes
--   this wait until it commits: the new limits take effect from the next claim.
-- Index: queues_pkey.
INSERT INTO awa.queues AS q (queue, dlq_enabled, finished_retention, dlq_retention,
                             failed_retention, concurrency_limit, rate_per_second, rate_burst,
                             key_concurrency_limit, key_rate_per_second, key_rate_burst)
VALUES (%(queue)s, coalesce(%(dlq_enabled)s::boolean, false), %(finished_retention)s::interval,
        %(dlq_retention)s::interval, %(failed_retention)s::interval,
        %(concurrency_limit)s::int, %(rate_per_second)s::float8, %(rate_burst)s::int,
        %(key_concurrency_limit)s::int, %(key_rate_per_second)s::float8,
        %(key_rate_burst)s::int)
ON CONFLICT (queue) DO UPDATE SET
    dlq_enabled = coalesce(%(dlq_enabled)s::boolean, q.dlq_enabled),
    finished_retention = coalesce(%(finished_retention)s::interval, q.finished_retention),
    dlq_retention = coalesce(%(dlq_retention)s::interval, q.dlq_retention),
    failed_retention = coalesce(%(failed_retention)s::interval, q.failed_retention),
    concurrency_limit = CASE WHEN %(concurrency_given)s::boolean THEN excluded.concurrency_limit
                             ELSE q.concurrency_limit END,
    rate_per_second = CASE WHEN %(rate_given)s::boolean THEN excluded.rate_per_second
                           ELSE q.rate_per_second END,
    rate_burst = CASE WHEN %(rate_given)s::boolean THEN excluded.rate_burst
                      ELSE q.rate_burst END,
    rate_tokens = CASE WHEN %(rate_given)s::boolean THEN NULL ELSE q.rate_tokens END,
    rate_updated_at = CASE WHEN %(rate_given)s::boolean THEN NULL ELSE q.rate_updated_at END,
    key_concurrency_limit = CASE WHEN %(key_concurrency_given)s::boolean
                                 THEN excluded.key_concurrency_limit
                                 ELSE q.key_concurrency_limit END,
    key_rate_per_second = CASE WHEN %(key_rate_given)s::boolean
                               THEN excluded.key_rate_per_second
                               ELSE q.key_rate_per_second END,
    key_rate_burst = CASE WHEN %(key_rate_given)s::boolean THEN excluded.key_rate_burst
                          ELSE q.key_rate_burst END
RETURNING q.queue, q.paused, q.dlq_enabled, extract(epoch FROM q.finished_retention)::float8,
          extract(epoch FROM q.dlq_retention)::float8,
          extract(epoch FROM q.failed_retention)::float8, q.concurrency_limit, q.rate_per_second,
          q.rate_burst, q.key_concurrency_limit, q.key_rate_per_second, q.key_rate_burst
