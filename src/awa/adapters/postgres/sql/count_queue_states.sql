-- Purpose: the queue summary's first count: jobs by queue and state, each group's oldest
--   available job, how many of the group reached it (a terminal state) in (since, now], and
--   whether the group's count is an estimate.
-- Parameters: now timestamptz, since timestamptz (both given: summarize_queues reads the
--   transaction's time first), exact_max int (a finished group counted past this is estimated).
-- Transition: none (read only).
-- Index: the work in progress, a sequential scan of awa.jobs_hot, on purpose: this is the count
--   every reader of the summary is spared, made by the maintenance leader once per interval,
--   and the partition holds no history (migration 0010). The finished jobs apart, never a scan
--   of them all (migration 0011): jobs_done_queue_state_idx skipped from one (queue, state) to
--   the next, each group counted in it up to exact_max + 1 entries, a group past exact_max
--   estimated by awa.finished_estimate; the window's ends from jobs_done_finished_idx, as many
--   as finished in it. A row per group of each partition: a unique job that finished and
--   still holds its key is in jobs_hot, and the summary adds the two up.
WITH RECURSIVE finished_groups AS (
    (SELECT d.queue, d.state FROM awa.jobs_done AS d ORDER BY d.queue, d.state LIMIT 1)
    UNION ALL
    SELECT next.queue, next.state
    FROM finished_groups AS g
    CROSS JOIN LATERAL (
        SELECT d.queue, d.state FROM awa.jobs_done AS d
        WHERE (d.queue, d.state) > (g.queue, g.state)
        ORDER BY d.queue, d.state
        LIMIT 1
    ) AS next
),
ended AS (
    SELECT d.queue, d.state, count(*) AS n
    FROM awa.jobs_done AS d
    WHERE d.state IN ('completed', 'failed', 'cancelled')
      AND d.finalized_at > %(since)s::timestamptz AND d.finalized_at <= %(now)s::timestamptz
    GROUP BY d.queue, d.state
)
SELECT queue, state, count(*),
       min(run_at) FILTER (WHERE state = 'available'),
       count(*) FILTER (
           WHERE finalized_at > %(since)s::timestamptz AND finalized_at <= %(now)s::timestamptz
       ),
       false
FROM awa.jobs_hot
GROUP BY queue, state
UNION ALL
SELECT g.queue, g.state,
       CASE WHEN counted.n > %(exact_max)s::int
            THEN greatest(awa.finished_estimate(g.queue, g.state), counted.n)
            ELSE counted.n END,
       NULL::timestamptz,
       coalesce(ended.n, 0),
       counted.n > %(exact_max)s::int
FROM finished_groups AS g
CROSS JOIN LATERAL (
    SELECT count(*) AS n
    FROM (
        SELECT FROM awa.jobs_done AS d
        WHERE d.queue = g.queue AND d.state = g.state
        LIMIT %(exact_max)s::int + 1
    ) AS bounded
) AS counted
LEFT JOIN ended ON ended.queue = g.queue AND ended.state = g.state
