-- Purpose: the last statement of a claim of a limited queue: row 3 for exactly the candidates
--   within_limits granted, and the queue's rate bucket as it left it, in one statement.
-- Parameters: now timestamptz (the claim's, read by flow_candidates.sql), ids bigint[] (the
--   granted candidates), deadline (interval, NULL = no deadline); queue text, tokens float8
--   and bucket_at timestamptz (NULL tokens: no bucket to write, the queue has no rate).
-- Transition: row 3 (claim_picked.sqlpart: the same values as claim.sql, so as
--   awa.domain.decisions.claim).
-- Guard: the ids were locked by flow_candidates.sql in this transaction, through a scan of
--   the claimable states, and stay locked until COMMIT (claim_picked.sqlpart's argument, one
--   statement earlier); the queue's row is this transaction's since lock_queue_flow.sql.
-- Index: jobs_hot_pkey (the ids), queues_pkey (the bucket).
WITH t AS (
    SELECT %(now)s::timestamptz AS now
), picked AS (
    SELECT unnest(%(ids)s::bigint[]) AS id
), bucket AS (
    UPDATE awa.queues AS q
    SET rate_tokens = %(tokens)s::float8, rate_updated_at = %(bucket_at)s::timestamptz
    WHERE q.queue = %(queue)s AND %(tokens)s::float8 IS NOT NULL
)
{part:claim_picked}
