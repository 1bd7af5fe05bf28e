-- Purpose: remove one entry from the dead-letter queue and return its job, to be retried.
-- Parameters: now (timestamptz, NULL = the database clock), id bigint.
-- Transition: first half of row 20 (DLQ → available); restore_jobs.sql is the second half.
-- Index: dlq_pkey.
SELECT coalesce(%(now)s::timestamptz, now()) AS now,
       d.id, d.kind, d.queue, d.args, d.state, d.priority, d.attempt, d.max_attempts,
       d.run_lease, d.run_at, d.created_at, d.tags, d.metadata, d.errors, d.attempted_at,
       d.heartbeat_at, d.deadline_at, d.finalized_at, d.progress, d.callback_id,
       d.callback_timeout_at, d.callback_result
FROM awa.dlq AS d
WHERE d.id = %(id)s
FOR UPDATE
