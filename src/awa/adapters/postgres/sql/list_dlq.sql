-- Purpose: dead-letter entries matching optional filters, in (dlq_at, id) order.
-- Parameters: queue text, kind text (NULL = any), limit int.
-- Transition: none (read only).
-- Index: dlq_queue_kind_idx (queue, kind, dlq_at, id), or dlq_at_idx when unfiltered.
SELECT {job_columns},
       dlq_reason, dlq_at
FROM awa.dlq
WHERE (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
ORDER BY dlq_at, id
LIMIT %(limit)s
