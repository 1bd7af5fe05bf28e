-- Purpose: how many jobs outside the dead-letter queue match optional filters (list_jobs.sql
--   without its limit).
-- Parameters: state text, kind text, queue text (each NULL = any).
-- Transition: none (read only).
-- Index: a sequential scan with the filters applied (an operator query, like list_jobs.sql).
SELECT count(*)
FROM awa.jobs
WHERE (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
