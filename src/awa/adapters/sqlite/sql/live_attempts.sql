-- Purpose: how many attempts of one queue are live (running or waiting_external: both hold a
--   slot of its concurrency_limit), counted inside the claim's write transaction.
-- Parameters: queue.
-- Index: jobs_live_queue_idx (queue, state) WHERE live, covering: a count over that queue's
--   entries alone, about as many as its limit (tests/sqlite/test_flow_schema.py checks the plan).
SELECT count(*) FROM awa_jobs
WHERE queue = :queue AND state IN ('running', 'waiting_external')
