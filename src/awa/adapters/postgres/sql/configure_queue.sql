-- Purpose: store the settings given for a queue, leave the others as they are, and return
--   them all (a queue without settings gets its row, defaults for what is not given).
-- Parameters: queue text; dlq_enabled boolean, finished_retention interval, dlq_retention
--   interval, failed_retention interval, each NULL to leave that setting as it is.
-- Transition: none (queue setting); dlq_enabled decides row 19 for later failures, the
--   retentions delete_completed.sql, delete_failed.sql and expire_dlq.sql.
-- Index: queues_pkey.
INSERT INTO awa.queues AS q (queue, dlq_enabled, finished_retention, dlq_retention,
                             failed_retention)
VALUES (%(queue)s, coalesce(%(dlq_enabled)s::boolean, false), %(finished_retention)s::interval,
        %(dlq_retention)s::interval, %(failed_retention)s::interval)
ON CONFLICT (queue) DO UPDATE SET
    dlq_enabled = coalesce(%(dlq_enabled)s::boolean, q.dlq_enabled),
    finished_retention = coalesce(%(finished_retention)s::interval, q.finished_retention),
    dlq_retention = coalesce(%(dlq_retention)s::interval, q.dlq_retention),
    failed_retention = coalesce(%(failed_retention)s::interval, q.failed_retention)
RETURNING q.queue, q.paused, q.dlq_enabled, extract(epoch FROM q.finished_retention)::float8,
          extract(epoch FROM q.dlq_retention)::float8,
          extract(epoch FROM q.failed_retention)::float8
