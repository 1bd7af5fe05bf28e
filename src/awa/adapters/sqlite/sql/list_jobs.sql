-- Purpose: jobs outside the dead-letter queue matching the filters, newest id first.
-- Parameters: state, kind, queue, tag, before_id (NULL: any), limit.
-- Index: the primary key, walked backwards.
SELECT {job_columns} FROM awa_jobs
WHERE (:state IS NULL OR state = :state)
  AND (:kind IS NULL OR kind = :kind)
  AND (:queue IS NULL OR queue = :queue)
  AND (:before_id IS NULL OR id < :before_id)
  AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(tags) WHERE value = :tag))
ORDER BY id DESC
LIMIT :limit
