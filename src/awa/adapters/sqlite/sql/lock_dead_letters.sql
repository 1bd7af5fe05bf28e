-- Purpose: every matching dead-lettered job, in (dlq_at, id) order.
-- Parameters: queue, kind (NULL: any). Index: dlq_queue_kind_idx, dlq_at_idx.
SELECT {job_columns} FROM awa_dlq
WHERE (:queue IS NULL OR queue = :queue) AND (:kind IS NULL OR kind = :kind)
ORDER BY dlq_at, id
