-- Purpose: delete the matching failed jobs outside the dead-letter queue.
-- Parameters: queue, kind (NULL: any). Transition: none (an operator's discard).
DELETE FROM awa_jobs
WHERE state = 'failed' AND (:queue IS NULL OR queue = :queue) AND (:kind IS NULL OR kind = :kind)
