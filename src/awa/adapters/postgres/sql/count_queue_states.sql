-- Purpose: the queue summary's first count, of the work in progress: jobs by queue and state in
--   awa.jobs_hot, each group's oldest available job, and how many of the group reached it (a
--   terminal state: a unique job that finished and still holds its key) in (since, now].
--   count_finished_states.sql counts awa.jobs_done; the summary adds the two up.
-- Parameters: now timestamptz, since timestamptz (both given: summarize_queues reads the
--   transaction's time first).
-- Transition: none (read only).
-- Index: a sequential scan of awa.jobs_hot, on purpose: this is the count every reader of the
--   summary is spared, made by the maintenance leader once per interval, and the partition
--   holds no history (migration 0010). A plain SELECT, so that PostgreSQL may scan in parallel.
SELECT queue, state, count(*),
       min(run_at) FILTER (WHERE state = 'available'),
       count(*) FILTER (
           WHERE finalized_at > %(since)s::timestamptz AND finalized_at <= %(now)s::timestamptz
       ),
       false
FROM awa.jobs_hot
GROUP BY queue, state
