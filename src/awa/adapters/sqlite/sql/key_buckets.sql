-- Purpose: the rate buckets of these keys of one queue as claims left them (no row: full),
--   read inside the claim's write transaction, which holds them until it ends.
-- Parameters: queue, keys (JSON array). Index: the primary key (queue, key).
SELECT key, tokens, updated_at FROM awa_key_buckets
WHERE queue = :queue AND key IN (SELECT value FROM json_each(:keys))
