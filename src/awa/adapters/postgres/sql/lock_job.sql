-- Purpose: lock one job for an operator verb (cancel, retry, move to the DLQ).
-- Parameters: now (timestamptz, NULL = the database clock), id bigint.
-- Transition: none by itself; the domain decides rows 17-19 on the returned value.
-- Time: read after the lock ({part:time_after_locks}): a cancel that waited for the row
--   stamps finalized_at when it took effect.
-- Index: jobs_pkey.
WITH locked AS MATERIALIZED (
    SELECT coalesce(q.dlq_enabled, false) AS dlq_enabled,
           {j.job_columns}
    FROM awa.jobs AS j
    LEFT JOIN awa.queues AS q ON q.queue = j.queue
    WHERE j.id = %(id)s
    FOR UPDATE OF j
), {part:time_after_locks}
SELECT t.now, l.*
FROM t, locked AS l
