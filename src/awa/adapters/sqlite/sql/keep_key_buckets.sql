-- Purpose: store one key's rate bucket as a claim left it (awa.domain.flow.take).
-- Parameters: queue, key, tokens, updated_at (us). Transition: none (a claim's bookkeeping,
--   in its transaction). Index: the primary key (queue, key).
INSERT INTO awa_key_buckets (queue, key, tokens, updated_at)
VALUES (:queue, :key, :tokens, :updated_at)
ON CONFLICT (queue, key) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at
