-- Purpose: jobs outside the dead-letter queue matching optional filters, oldest id first.
-- Parameters: state text, kind text, queue text, tag text (each NULL = any), before_id bigint
--   (NULL = no bound; else only ids below it), limit int.
-- Transition: none (read only).
-- Index: jobs_pkey in id order with the filters applied on the way (an operator query; no
--   index of its own, to keep the hot path's write cost down).
SELECT {job_columns}
FROM awa.jobs
WHERE (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(tag)s::text IS NULL OR tags @> ARRAY[%(tag)s::text])
  AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s::bigint)
ORDER BY id
LIMIT %(limit)s
