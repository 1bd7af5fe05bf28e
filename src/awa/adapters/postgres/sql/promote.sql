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
RETURNING {j.job_columns}
