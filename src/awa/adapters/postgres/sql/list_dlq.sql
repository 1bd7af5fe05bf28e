-- Purpose: dead-letter entries matching optional filters, newest job id first; a page goes on
--   from the last id of the previous one.
-- Parameters: queue text, kind text (NULL = any), before_id bigint (NULL = from the newest),
--   limit int.
-- Transition: none (read only).
-- Index: dlq_pkey backwards from before_id, the filters applied on the way.
SELECT {job_columns},
       dlq_reason, dlq_at
FROM awa.dlq
WHERE (%(before_id)s::bigint IS NULL OR id < %(before_id)s::bigint)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
ORDER BY id DESC
LIMIT %(limit)s
