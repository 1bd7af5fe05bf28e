-- Purpose: the queue summary as last counted (keep_queue_summary.sql), with every queue's
--   settings as they are now: its pause, its DLQ routing and its flow limits (the dashboard
--   shows live attempts against them). No row when nothing has counted the queues yet.
-- Parameters: none.
-- Transition: none (read only).
-- Index: queue_summary_pkey (one row); awa.queues is one row per configured queue.
SELECT s.counted_at, s.window_s, s.states, s.dead,
       (SELECT coalesce(jsonb_agg(jsonb_build_array(
                   q.queue, q.paused, q.dlq_enabled, q.concurrency_limit, q.rate_per_second,
                   q.rate_burst, q.key_concurrency_limit, q.key_rate_per_second,
                   q.key_rate_burst)), '[]')
        FROM awa.queues AS q)
FROM awa.queue_summary AS s
