-- Purpose: how many attempts of a queue are live (running or waiting_external) per
--   concurrency_key, for a claim of a queue with a key_concurrency_limit
--   (PgTransaction.live_by_key); keys with none, and the jobs without a key, are left out.
-- Parameters: queue text.
-- Transition: none (read only).
-- Why after the lock: run once lock_queue_flow.sql holds the queue's row, so its snapshot sees
--   every attempt the claims before committed (flow_candidates.sql says why).
-- Index: jobs_live_queue_idx (0013): the queue's live attempts only, bounded by its limits.
SELECT lj.concurrency_key, count(*)
FROM awa.jobs AS lj
WHERE lj.queue = %(queue)s
  AND lj.state IN ('running', 'waiting_external')
  AND lj.concurrency_key IS NOT NULL
GROUP BY lj.concurrency_key
