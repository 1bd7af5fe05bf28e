-- Purpose: whether failed outcomes on a queue move to the dead-letter queue.
-- Parameters: queue text, dlq_enabled boolean.
-- Transition: none (queue setting); decides row 19 for later failures.
-- Index: queues_pkey.
INSERT INTO awa.queues AS q (queue, dlq_enabled) VALUES (%(queue)s, %(dlq_enabled)s)
ON CONFLICT (queue) DO UPDATE SET dlq_enabled = excluded.dlq_enabled
