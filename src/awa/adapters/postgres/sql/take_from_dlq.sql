-- Purpose: remove one entry from the dead-letter queue and return its job, to be retried.
-- Parameters: now (timestamptz, NULL = the database clock), id bigint.
-- Transition: first half of row 20 (DLQ → available); restore_jobs.sql is the second half.
-- Index: dlq_pkey.
SELECT coalesce(%(now)s::timestamptz, now()) AS now,
       {d.job_columns}
FROM awa.dlq AS d
WHERE d.id = %(id)s
FOR UPDATE
