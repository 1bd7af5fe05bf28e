-- Purpose: lock a batch of jobs (outside the DLQ) in some states, optionally of one queue and
--   kind, with ids above a cursor, in id order: bulk operator verbs (retry_failed,
--   drain_queue) walk a large set one bounded transaction at a time.
-- Parameters: now (timestamptz, NULL = the database clock), states text[], queue text, kind
--   text (NULL = any), after_id bigint, limit int.
-- Transition: none by itself; the domain decides row 18 (retry) or 17 (cancel) for each row.
-- Time: read after the locks ({part:time_after_locks}).
-- Index: jobs_pkey in id order from after_id, the filters applied on the way (operator verbs).
WITH locked AS MATERIALIZED (
    SELECT coalesce(q.dlq_enabled, false) AS dlq_enabled,
           {j.job_columns}
    FROM awa.jobs AS j
    LEFT JOIN awa.queues AS q ON q.queue = j.queue
    WHERE j.id > %(after_id)s
      AND j.state = ANY (%(states)s::text[])
      AND (%(queue)s::text IS NULL OR j.queue = %(queue)s::text)
      AND (%(kind)s::text IS NULL OR j.kind = %(kind)s::text)
    ORDER BY j.id
    LIMIT %(limit)s
    FOR UPDATE OF j
), {part:time_after_locks}
SELECT t.now, l.*
FROM t, locked AS l
ORDER BY l.id
