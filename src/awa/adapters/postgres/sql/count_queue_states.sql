-- Purpose: the queue summary's first count: jobs by queue and state, each group's oldest
--   available job, and how many of the group reached it (a terminal state) in (since, now].
-- Parameters: now timestamptz, since timestamptz (both given: summarize_queues reads the
--   transaction's time first).
-- Transition: none (read only).
-- Index: a sequential scan of awa.jobs, on purpose: this is the count every reader of the
--   summary is spared, made by the maintenance leader once per interval. A plain SELECT, not
--   part of the write, so that PostgreSQL may scan in parallel (a data-modifying statement
--   never does).
SELECT queue, state, count(*),
       min(run_at) FILTER (WHERE state = 'available'),
       count(*) FILTER (
           WHERE finalized_at > %(since)s::timestamptz AND finalized_at <= %(now)s::timestamptz
       )
FROM awa.jobs
GROUP BY queue, state
