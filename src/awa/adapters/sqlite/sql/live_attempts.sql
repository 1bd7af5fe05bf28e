-- Purpose: how many attempts of one queue are live (running or waiting_external: both hold a
--   slot of its concurrency_limit), counted inside the claim's write transaction.
-- Parameters: queue.
-- Index: jobs_live_queue_idx (queue) WHERE live: a count over that queue's entries alone, as
--   small as the queue's limit (tests/sqlite/test_flow_schema.py checks the plan).
SELECT count(*) FROM awa_jobs
WHERE queue = :queue AND state IN ('running', 'waiting_external')
