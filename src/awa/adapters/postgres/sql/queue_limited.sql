-- Purpose: whether claims of a queue must take the limited path: it has a concurrency or rate
--   limit, of its own or per key, and is not paused. Asked only after claim.sql (or claim_aged.sql) claimed nothing,
--   so an unlimited queue with jobs pays nothing for flow control, and one without jobs pays
--   this one read (PostgresStore._claim).
-- Parameters: queue text.
-- Transition: none (read only; no lock: lock_queue_flow.sql takes it, and reads the row again).
-- Index: queues_pkey.
SELECT EXISTS (
    SELECT 1 FROM awa.queues AS q
    WHERE q.queue = %(queue)s
      AND NOT q.paused
      AND (q.concurrency_limit IS NOT NULL OR q.rate_per_second IS NOT NULL
           OR q.key_concurrency_limit IS NOT NULL OR q.key_rate_per_second IS NOT NULL)
)
