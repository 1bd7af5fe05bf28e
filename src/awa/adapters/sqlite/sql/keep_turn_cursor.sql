-- Purpose: store the key whose turn came last in a keyed queue (NULL: the jobs without a
--   key); the next claim's turns start after it (awa.domain.flow_turns).
-- Parameters: queue, key. Transition: none (a claim's bookkeeping, in its transaction).
-- Index: the primary key. The row exists: queue_flow.sql read its key limits.
UPDATE awa_queues SET turn_cursor = :key, turn_taken = 1
WHERE queue = :queue
