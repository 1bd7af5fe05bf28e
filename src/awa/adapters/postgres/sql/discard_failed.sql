-- Purpose: delete the failed jobs (outside the dead-letter queue) of a queue and/or kind; the
--   row count is the answer.
-- Parameters: queue text, kind text (NULL = any; the core refuses an empty filter unless
--   all=True before running this).
-- Transition: none of the table's: failed rows leave the store (as retention would remove
--   them), releasing any unique key they held.
-- Index: a scan of awa.jobs with the filters (an operator verb).
DELETE FROM awa.jobs
WHERE state = 'failed'
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
