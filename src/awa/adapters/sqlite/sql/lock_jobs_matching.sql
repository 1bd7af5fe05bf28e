-- Purpose: a batch of jobs outside the dead-letter queue in some states (and queue, kind
--   when given) above an id, in id order: bulk retries and drains walk the table this way.
-- Parameters: states (JSON array), queue, kind (NULL: any), after_id, limit.
SELECT {j.job_columns}, coalesce(q.dlq_enabled, 0)
FROM awa_jobs AS j LEFT JOIN awa_queues AS q ON q.queue = j.queue
WHERE j.id > :after_id
  AND j.state IN (SELECT value FROM json_each(:states))
  AND (:queue IS NULL OR j.queue = :queue)
  AND (:kind IS NULL OR j.kind = :kind)
ORDER BY j.id
LIMIT :limit
