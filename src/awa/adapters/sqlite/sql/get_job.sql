-- Purpose: one job from whichever home holds it. Parameters: id.
SELECT {job_columns} FROM awa_jobs WHERE id = :id
UNION ALL
SELECT {job_columns} FROM awa_dlq WHERE id = :id
