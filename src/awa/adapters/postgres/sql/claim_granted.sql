-- Purpose: the last statement of a claim of a limited queue: row 3 for exactly the candidates
--   within_limits granted, and what it left of the queue's flow state, in one statement: the
--   queue's rate bucket, the key buckets it took tokens from, and the turn cursor.
-- Parameters: now timestamptz (the claim's, read by the candidates' statement), ids bigint[]
--   (the granted candidates), deadline (interval, NULL = no deadline); queue text, tokens
--   float8 and bucket_at timestamptz (NULL tokens: no bucket to write, the queue has no rate);
--   key_names text[], key_tokens float8[], key_ats timestamptz[] (the key buckets, all the
--   same length, empty: none); turn_given boolean with turn_cursor text (the key whose turn
--   came last, NULL: the jobs without a key; turn_given false: no cursor to write).
-- Transition: row 3 (claim_picked.sqlpart: the same values as claim.sql, so as
--   awa.domain.decisions.claim).
-- Guard: the ids were locked by flow_candidates.sql (or its keyed or aged forms) in this
--   transaction, through a scan of the claimable states, and stay locked until COMMIT
--   (claim_picked.sqlpart's argument, one statement earlier); the queue's row is this
--   transaction's since lock_queue_flow.sql, and with it the queue's key buckets (no claim
--   writes them without that lock). The queue's row is written by one CTE (`flow`): two
--   updates of one row in one statement would keep only one of them.
-- Index: jobs_hot_pkey (the ids), queues_pkey (the bucket and cursor), flow_key_buckets_pkey.
WITH t AS (
    SELECT %(now)s::timestamptz AS now
), picked AS (
    SELECT unnest(%(ids)s::bigint[]) AS id
), flow AS (
    UPDATE awa.queues AS q
    SET rate_tokens = CASE WHEN %(tokens)s::float8 IS NULL THEN q.rate_tokens
                           ELSE %(tokens)s::float8 END,
        rate_updated_at = CASE WHEN %(tokens)s::float8 IS NULL THEN q.rate_updated_at
                               ELSE %(bucket_at)s::timestamptz END,
        turn_cursor = CASE WHEN %(turn_given)s::boolean THEN %(turn_cursor)s::text
                           ELSE q.turn_cursor END,
        turn_taken = q.turn_taken OR %(turn_given)s::boolean
    WHERE q.queue = %(queue)s
      AND (%(tokens)s::float8 IS NOT NULL OR %(turn_given)s::boolean)
), key_buckets AS (
    INSERT INTO awa.flow_key_buckets AS b (queue, key, tokens, updated_at)
    SELECT %(queue)s, k.key, k.tokens, k.updated_at
    FROM unnest(%(key_names)s::text[], %(key_tokens)s::float8[], %(key_ats)s::timestamptz[])
         AS k(key, tokens, updated_at)
    ON CONFLICT (queue, key) DO UPDATE
    SET tokens = excluded.tokens, updated_at = excluded.updated_at
)
{part:claim_picked}
