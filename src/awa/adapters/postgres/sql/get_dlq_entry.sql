-- Purpose: the dead-letter entry of one job, if it is dead-lettered.
-- Parameters: id bigint.
-- Transition: none (read only).
-- Index: dlq_pkey (id).
SELECT id, kind, queue, args, state, priority, attempt, max_attempts, run_lease, run_at,
       created_at, tags, metadata, errors, attempted_at, heartbeat_at, deadline_at,
       finalized_at, progress, callback_id, callback_timeout_at, callback_result,
       dlq_reason, dlq_at
FROM awa.dlq
WHERE id = %(id)s
