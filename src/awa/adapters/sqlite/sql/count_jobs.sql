-- Purpose: how many jobs outside the dead-letter queue match the filters.
-- Parameters: state, kind, queue (NULL: any).
SELECT count(*) FROM awa_jobs
WHERE (:state IS NULL OR state = :state)
  AND (:kind IS NULL OR kind = :kind)
  AND (:queue IS NULL OR queue = :queue)
