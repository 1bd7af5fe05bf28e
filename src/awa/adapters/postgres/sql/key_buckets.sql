-- Purpose: the rate buckets of some concurrency keys of a queue as the claims before left
--   them, for a claim of a queue with a key_rate_limit (PgTransaction.key_buckets); a key
--   without a row is full.
-- Parameters: queue text, keys text[] (the candidates' keys).
-- Transition: none (read only; the queue's row lock, held by this claim since
--   lock_queue_flow.sql, keeps every other claim from writing them until COMMIT).
-- Index: flow_key_buckets_pkey (queue, key).
SELECT b.key, b.tokens, b.updated_at
FROM awa.flow_key_buckets AS b
WHERE b.queue = %(queue)s AND b.key = ANY(%(keys)s::text[])
