-- Purpose: one job from whichever home holds it (awa.jobs or awa.dlq).
-- Parameters: id bigint.
-- Transition: none (read only).
-- Index: jobs_pkey, dlq_pkey.
SELECT {job_columns}
FROM awa.jobs WHERE id = %(id)s
UNION ALL
SELECT {job_columns}
FROM awa.dlq WHERE id = %(id)s
