-- Purpose: the dead-letter entry of one job, if it is dead-lettered.
-- Parameters: id bigint.
-- Transition: none (read only).
-- Index: dlq_pkey (id).
SELECT {job_columns},
       dlq_reason, dlq_at
FROM awa.dlq
WHERE id = %(id)s
