-- Purpose: the queue summary's count of the finished jobs apart (awa.jobs_done): by queue and
--   state, how many of each group ended in (since, now], and whether the group's count is an
--   estimate (count_queue_states.sql counts the work in progress).
-- Parameters: now timestamptz, since timestamptz, exact_max int (a group counted past this is
--   estimated).
-- Transition: none (read only).
-- Index: never a scan of the whole partition, which holds the retention's history (migration
--   0011): jobs_done_queue_state_idx skipped from one (queue, state) to the next, each group
--   counted in it up to exact_max + 1 entries, a group past exact_max estimated by
--   awa.finished_estimate; the window's ends from jobs_done_completed_idx and
--   jobs_done_failed_idx (0012, one arm of the UNION each: a single scan would have to be of
--   an index of every finished job), as many as finished in it. summarize_queues runs it with sequential scans priced out (SET LOCAL): while the
--   window is a large share of the partition the planner would rather read it all, and that
--   read grows with the history.
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
    FROM (
        SELECT c.queue, c.state FROM awa.jobs_done AS c
        WHERE c.state = 'completed'
          AND c.finalized_at > %(since)s::timestamptz AND c.finalized_at <= %(now)s::timestamptz
        UNION ALL
        SELECT f.queue, f.state FROM awa.jobs_done AS f
        WHERE f.state IN ('failed', 'cancelled')
          AND f.finalized_at > %(since)s::timestamptz AND f.finalized_at <= %(now)s::timestamptz
    ) AS d
    GROUP BY d.queue, d.state
)
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
