-- Purpose: per queue: job counts by state, dead-letter depth, settings (retentions in
--   seconds, NULL: the leader's default; the flow limits, the queue's then its keys', NULL:
--   none), oldest available job.
--   Every queue that has jobs, dead-letter entries or settings appears, in name order.
-- Parameters: none.
-- Transition: none (read only).
-- Index: sequential scans (an operator query over the whole table), dlq_queue_kind_idx.
WITH counts AS (
    SELECT queue, jsonb_object_agg(state, n) AS by_state,
           min(oldest_available_at) AS oldest_available_at
    FROM (SELECT queue, state, count(*) AS n,
                 min(run_at) FILTER (WHERE state = 'available') AS oldest_available_at
          FROM awa.jobs GROUP BY queue, state) AS s
    GROUP BY queue
), dlq AS (
    SELECT queue, count(*) AS depth FROM awa.dlq GROUP BY queue
), names AS (
    SELECT queue FROM counts UNION SELECT queue FROM dlq UNION SELECT queue FROM awa.queues
)
SELECT n.queue, coalesce(c.by_state, '{}'::jsonb), coalesce(d.depth, 0),
       coalesce(q.paused, false), coalesce(q.dlq_enabled, false), c.oldest_available_at,
       extract(epoch FROM q.finished_retention)::float8, extract(epoch FROM q.dlq_retention)::float8,
       extract(epoch FROM q.failed_retention)::float8,
       q.concurrency_limit, q.rate_per_second, q.rate_burst, q.key_concurrency_limit,
       q.key_rate_per_second, q.key_rate_burst
FROM names AS n
LEFT JOIN counts AS c ON c.queue = n.queue
LEFT JOIN dlq AS d ON d.queue = n.queue
LEFT JOIN awa.queues AS q ON q.queue = n.queue
ORDER BY n.queue
