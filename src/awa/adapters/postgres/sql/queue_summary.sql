-- Purpose: the queue summary as last counted (keep_queue_summary.sql), with every queue's
--   settings as they are now. No row when nothing has counted the queues yet.
-- Parameters: none.
-- Transition: none (read only).
-- Index: queue_summary_pkey (one row); awa.queues is one row per configured queue.
SELECT s.counted_at, s.window_s, s.states, s.dead,
       (SELECT coalesce(jsonb_agg(jsonb_build_array(q.queue, q.paused, q.dlq_enabled)), '[]')
        FROM awa.queues AS q)
FROM awa.queue_summary AS s
