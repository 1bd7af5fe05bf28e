-- Purpose: lock one job for an operator verb (cancel, retry, move to the DLQ).
-- Parameters: now (timestamptz, NULL = the database clock), id bigint.
-- Transition: none by itself; the domain decides rows 17-19 on the returned value.
-- Index: jobs_pkey.
SELECT coalesce(%(now)s::timestamptz, now()) AS now,
       coalesce(q.dlq_enabled, false) AS dlq_enabled,
       {j.job_columns}
FROM awa.jobs AS j
LEFT JOIN awa.queues AS q ON q.queue = j.queue
WHERE j.id = %(id)s
FOR UPDATE OF j
