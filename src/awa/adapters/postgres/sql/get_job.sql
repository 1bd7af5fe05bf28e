-- Purpose: one job from whichever home holds it (awa.jobs or awa.dlq).
-- Parameters: id bigint.
-- Transition: none (read only).
-- Index: jobs_pkey, dlq_pkey.
SELECT id, kind, queue, args, state, priority, attempt, max_attempts, run_lease, run_at,
       created_at, tags, metadata, errors, attempted_at, heartbeat_at, deadline_at,
       finalized_at, progress, callback_id, callback_timeout_at, callback_result
FROM awa.jobs WHERE id = %(id)s
UNION ALL
SELECT id, kind, queue, args, state, priority, attempt, max_attempts, run_lease, run_at,
       created_at, tags, metadata, errors, attempted_at, heartbeat_at, deadline_at,
       finalized_at, progress, callback_id, callback_timeout_at, callback_result
FROM awa.dlq WHERE id = %(id)s
