-- Purpose: store a rate-limited queue's bucket as a claim left it (awa.domain.flow.take).
-- Parameters: queue, tokens, updated_at (us). Transition: none (a claim's bookkeeping, in its
--   transaction). Index: the primary key. The row exists: queue_flow.sql read its rate.
UPDATE awa_queues SET rate_tokens = :tokens, rate_updated_at = :updated_at
WHERE queue = :queue
