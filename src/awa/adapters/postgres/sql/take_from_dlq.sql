-- Purpose: lock one entry of the dead-letter queue and return its job, to be retried.
-- Parameters: now (timestamptz, NULL = the database clock), id bigint.
-- Transition: first half of row 20 (DLQ → available); delete_from_dlq.sql and
--   restore_jobs.sql are the second half.
-- Time: read after the lock ({part:time_after_locks}): the retried job's run_at.
-- Index: dlq_pkey.
WITH locked AS MATERIALIZED (
    SELECT {d.job_columns}
    FROM awa.dlq AS d
    WHERE d.id = %(id)s
    FOR UPDATE
), {part:time_after_locks}
SELECT t.now, l.*
FROM t, locked AS l
