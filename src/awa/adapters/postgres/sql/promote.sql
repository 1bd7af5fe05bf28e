-- Purpose: make up to `limit` due scheduled and retryable jobs available.
-- Parameters: now (timestamptz, NULL = the database clock), limit int.
-- Transition: row 2 (scheduled, retryable → available when run_at <= now); the same values as
--   awa.domain.decisions.promote (only the state changes).
-- Index: jobs_due_idx (run_at, id) WHERE state IN (scheduled, retryable). SKIP LOCKED for
--   concurrent maintainers; the UPDATE re-checks the state.
WITH t AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), due AS (
    SELECT j.id
    FROM awa.jobs AS j, t
    WHERE j.state IN ('scheduled', 'retryable') AND j.run_at <= t.now
    ORDER BY j.run_at, j.id
    LIMIT %(limit)s
    FOR UPDATE OF j SKIP LOCKED
)
UPDATE awa.jobs AS j
SET state = 'available'
FROM due
WHERE j.id = due.id AND j.state IN ('scheduled', 'retryable')
RETURNING j.id, j.kind, j.queue, j.args, j.state, j.priority, j.attempt, j.max_attempts,
          j.run_lease, j.run_at, j.created_at, j.tags, j.metadata, j.errors, j.attempted_at,
          j.heartbeat_at, j.deadline_at, j.finalized_at, j.progress, j.callback_id,
          j.callback_timeout_at, j.callback_result
