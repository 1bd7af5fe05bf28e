-- Purpose: jobs outside the dead-letter queue matching optional filters, newest id first; a
--   page goes on from the last id of the previous one.
-- Parameters: state text, kind text, queue text, tag text (each NULL = any; a tag matches a job
--   that holds it among its tags), before_id bigint (NULL = from the newest), limit int.
-- Transition: none (read only).
-- Index: jobs_pkey backwards from before_id, the filters applied on the way (an operator query;
--   no index of its own, to keep the hot path's write cost down).
SELECT {job_columns}
FROM awa.jobs
WHERE (%(before_id)s::bigint IS NULL OR id < %(before_id)s::bigint)
  AND (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(tag)s::text IS NULL OR tags @> ARRAY[%(tag)s::text])
ORDER BY id DESC
LIMIT %(limit)s
