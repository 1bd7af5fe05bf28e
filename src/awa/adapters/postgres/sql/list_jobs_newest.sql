-- Purpose: list_jobs.sql newest id first: a page of the most recent matching jobs, and with
--   before_id the page after it (keyset pagination: each page starts below the last id shown).
-- Parameters: state text, kind text, queue text, tag text (each NULL = any), before_id bigint
--   (NULL = from the newest), limit int.
-- Transition: none (read only).
-- Index: jobs_pkey scanned backwards from before_id, the filters applied on the way.
SELECT {job_columns}
FROM awa.jobs
WHERE (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(tag)s::text IS NULL OR tags @> ARRAY[%(tag)s::text])
  AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s::bigint)
ORDER BY id DESC
LIMIT %(limit)s
