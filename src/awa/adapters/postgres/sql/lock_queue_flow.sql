-- Purpose: the first statement of a claim of a limited queue (PostgresStore._claim_limited):
--   lock the queue's row, and read its limits (its own and its keys'), rate bucket and turn
--   cursor (awa.adapters.core.QueueFlow), only when it has a limit and is not paused (else no row: no lock, and the claim takes claim.sql's path). The lock is
--   what holds a limit across the fleet: the claims of a limited queue take turns, each
--   counting what the one before it committed (flow_candidates.sql). It is the row lock of
--   the claim's own transaction, held until COMMIT: a claimer that dies leaks nothing (no
--   advisory lock). configure_queue.sql and set_queue_paused.sql wait for it, so the limits
--   and the pause cannot change under the claim: the candidates need no guard of their own.
-- Parameters: queue text.
-- Transition: none by itself (guards row 3 for a limited queue).
-- Concurrency: waiting for the lock, then READ COMMITTED re-reads the row's latest version
--   and re-checks the WHERE on it: the bucket read is the one the previous claim wrote, and
--   a limit removed (or a pause set) meanwhile returns no row.
-- Index: queues_pkey.
SELECT q.concurrency_limit, q.rate_per_second, q.rate_burst, q.rate_tokens, q.rate_updated_at,
       q.key_concurrency_limit, q.key_rate_per_second, q.key_rate_burst, q.turn_cursor,
       q.turn_taken
FROM awa.queues AS q
WHERE q.queue = %(queue)s
  AND NOT q.paused
  AND (q.concurrency_limit IS NOT NULL OR q.rate_per_second IS NOT NULL
       OR q.key_concurrency_limit IS NOT NULL OR q.key_rate_per_second IS NOT NULL)
FOR UPDATE
