-- Purpose: move failed jobs (already written back) from awa.jobs into awa.dlq.
-- Parameters: now (timestamptz, the transaction's decided time), ids bigint[],
--   reasons text[] (same length).
-- Transition: row 19 (failed → DLQ); a job is in exactly one home afterwards.
-- Index: jobs_pkey; dlq_pkey on insert. Rows were locked earlier in the transaction.
WITH moved AS (
    DELETE FROM awa.jobs AS j
    USING unnest(%(ids)s::bigint[], %(reasons)s::text[]) AS m(id, reason)
    WHERE j.id = m.id AND j.state = 'failed'
    RETURNING j.*, m.reason
)
INSERT INTO awa.dlq (id, kind, queue, args, state, priority, attempt, max_attempts, run_lease,
                     run_at, created_at, tags, metadata, errors, attempted_at, heartbeat_at,
                     deadline_at, finalized_at, progress, callback_id, callback_timeout_at,
                     callback_result, dlq_reason, dlq_at)
SELECT id, kind, queue, args, state, priority, attempt, max_attempts, run_lease, run_at,
       created_at, tags, metadata, errors, attempted_at, heartbeat_at, deadline_at,
       finalized_at, progress, callback_id, callback_timeout_at, callback_result,
       reason, %(now)s::timestamptz
FROM moved
