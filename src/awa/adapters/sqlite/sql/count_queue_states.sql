-- Purpose: the queue summary's state groups: jobs by (queue, state), the oldest available
--   run_at, and how many reached a terminal state within (since, now].
-- Parameters: now, since (us).
SELECT queue, state, count(*),
       min(CASE WHEN state = 'available' THEN run_at END),
       count(CASE WHEN finalized_at > :since AND finalized_at <= :now THEN 1 END)
FROM awa_jobs
GROUP BY queue, state
