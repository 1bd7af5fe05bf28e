-- Purpose: lock one job for an operator verb (cancel, retry, move to the DLQ).
-- Parameters: now (timestamptz, NULL = the database clock), id bigint.
-- Transition: none by itself; the domain decides rows 17-19 on the returned value.
-- Index: jobs_pkey.
SELECT coalesce(%(now)s::timestamptz, now()) AS now,
       coalesce(q.dlq_enabled, false) AS dlq_enabled,
       j.id, j.kind, j.queue, j.args, j.state, j.priority, j.attempt, j.max_attempts,
       j.run_lease, j.run_at, j.created_at, j.tags, j.metadata, j.errors, j.attempted_at,
       j.heartbeat_at, j.deadline_at, j.finalized_at, j.progress, j.callback_id,
       j.callback_timeout_at, j.callback_result
FROM awa.jobs AS j
LEFT JOIN awa.queues AS q ON q.queue = j.queue
WHERE j.id = %(id)s
FOR UPDATE OF j
