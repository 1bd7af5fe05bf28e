-- Purpose: count every queue once and keep the counts as the queue summary: jobs by queue and
--   state (the oldest available job; how many reached a terminal state within the window), and
--   dead-letter entries by queue, kind and reason (how many arrived within the window).
-- Parameters: now (timestamptz, NULL = the database clock), window interval, window_s float.
-- Transition: none (reads awa.jobs and awa.dlq; writes the one row of awa.queue_summary).
-- Index: one sequential scan of each table, on purpose: this is the count every reader of the
--   summary is spared, run by the maintenance leader once per interval rather than per request.
WITH t AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), states AS (
    SELECT j.queue, j.state, count(*) AS n,
           min(j.run_at) FILTER (WHERE j.state = 'available') AS oldest_available_at,
           count(*) FILTER (
               WHERE j.finalized_at > t.now - %(window)s::interval AND j.finalized_at <= t.now
           ) AS ended
    FROM awa.jobs AS j, t
    GROUP BY j.queue, j.state, t.now
), dead AS (
    SELECT d.queue, d.kind, d.dlq_reason, count(*) AS n, max(d.dlq_at) AS latest_at,
           count(*) FILTER (
               WHERE d.dlq_at > t.now - %(window)s::interval AND d.dlq_at <= t.now
           ) AS ended
    FROM awa.dlq AS d, t
    GROUP BY d.queue, d.kind, d.dlq_reason, t.now
)
INSERT INTO awa.queue_summary AS s (only_row, counted_at, window_s, states, dead)
SELECT true, t.now, %(window_s)s,
       (SELECT coalesce(jsonb_agg(jsonb_build_array(
            queue, state, n, oldest_available_at, ended)), '[]') FROM states),
       (SELECT coalesce(jsonb_agg(jsonb_build_array(
            queue, kind, dlq_reason, n, latest_at, ended)), '[]') FROM dead)
FROM t
ON CONFLICT (only_row) DO UPDATE
SET counted_at = excluded.counted_at, window_s = excluded.window_s,
    states = excluded.states, dead = excluded.dead
