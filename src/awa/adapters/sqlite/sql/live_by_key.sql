-- Purpose: how many attempts of one queue are live (running or waiting_external) per
--   concurrency_key, the jobs without a key left out, counted inside a keyed claim's write
--   transaction.
-- Parameters: queue.
-- Index: jobs_live_key_idx (queue, concurrency_key, state) WHERE keyed and live, covering: the
--   queue's keyed live attempts alone, at most its key limit per key.
SELECT concurrency_key, count(*) FROM awa_jobs
WHERE queue = :queue AND concurrency_key IS NOT NULL AND state IN ('running', 'waiting_external')
GROUP BY concurrency_key
