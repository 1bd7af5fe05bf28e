-- Purpose: dead-letter entries matching the filters, newest job id first.
-- Parameters: queue, kind, before_id (NULL: any), limit.
SELECT {job_columns}, dlq_reason, dlq_at FROM awa_dlq
WHERE (:queue IS NULL OR queue = :queue)
  AND (:kind IS NULL OR kind = :kind)
  AND (:before_id IS NULL OR id < :before_id)
ORDER BY id DESC
LIMIT :limit
