-- Purpose: lock the job that holds a unique key (awa.domain.unique.holds_unique_key), before
--   a move that would take the key back (an operator retry, a DLQ redrive) or to cancel it.
-- Parameters: now (timestamptz, NULL = the database clock), key text.
-- Transition: none by itself; the core refuses the retake (UniqueConflict) or cancels (row 17).
-- Time: read after the lock ({part:time_after_locks}).
-- Index: jobs_unique_key_idx (unique on the same predicate: at most one row), awa.jobs_hot's:
--   every holder lives there (awa.job_home, migration 0010).
WITH locked AS MATERIALIZED (
    SELECT coalesce(q.dlq_enabled, false) AS dlq_enabled,
           {j.job_columns}
    FROM awa.jobs_hot AS j
    LEFT JOIN awa.queues AS q ON q.queue = j.queue
    WHERE j.unique_key = %(key)s
      AND j.unique_key IS NOT NULL AND j.unique_states & awa.state_bit(j.state) <> 0
    FOR UPDATE OF j
), {part:time_after_locks}
SELECT t.now, l.*
FROM t, locked AS l
