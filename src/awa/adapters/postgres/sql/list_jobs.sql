-- Purpose: jobs outside the dead-letter queue matching optional filters, newest id first; a
--   page goes on from the last id of the previous one.
-- Parameters: state text, kind text, queue text, tag text (each NULL = any; a tag matches a job
--   that holds it among its tags), before_id bigint (NULL = from the newest), limit int.
-- Transition: none (read only).
-- Index: jobs_pkey backwards from before_id, the filters applied on the way (an operator query;
--   no index of its own, to keep the hot path's write cost down).
SELECT {job_columns}
FROM awa.jobs
{part:listing_page}
