-- Purpose: lock the job whose pending callback has this id (the external side answering).
-- Parameters: now (timestamptz, NULL = the database clock), callback_id text.
-- Transition: none by itself; the domain decides rows 11-13 and the callback heartbeat.
--   Concurrent resolutions queue on the row lock; after the first commits, the row no longer
--   carries the id (every resolution clears it), so the others find nothing.
-- Time: read after the lock ({part:time_after_locks}): a callback heartbeat that waited for
--   the row counts its new callback_timeout_at from when it took effect.
-- Index: jobs_callback_id_idx (unique, callback_id IS NOT NULL), awa.jobs_hot's: only a live
--   job carries a callback id, and live jobs are hot (migration 0010); through awa.jobs the
--   planner would also scan awa.jobs_done, which has no such index.
WITH locked AS MATERIALIZED (
    SELECT coalesce(q.dlq_enabled, false) AS dlq_enabled,
           {j.job_columns}
    FROM awa.jobs_hot AS j
    LEFT JOIN awa.queues AS q ON q.queue = j.queue
    WHERE j.callback_id = %(callback_id)s
    FOR UPDATE OF j
), {part:time_after_locks}
SELECT t.now, l.*
FROM t, locked AS l
