-- Purpose: jobs outside the dead-letter queue matching optional filters, oldest id first.
-- Parameters: state text, kind text, queue text (each NULL = any), limit int.
-- Transition: none (read only).
-- Index: jobs_pkey in id order with the filters applied on the way (an operator query; no
--   index of its own, to keep the hot path's write cost down).
SELECT id, kind, queue, args, state, priority, attempt, max_attempts, run_lease, run_at,
       created_at, tags, metadata, errors, attempted_at, heartbeat_at, deadline_at,
       finalized_at, progress, callback_id, callback_timeout_at, callback_result
FROM awa.jobs
WHERE (%(state)s::text IS NULL OR state = %(state)s::text)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
ORDER BY id
LIMIT %(limit)s
