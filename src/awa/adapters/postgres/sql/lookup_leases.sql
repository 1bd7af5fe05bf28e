-- Purpose: explain stale writes: the current lease and state of jobs the guard did not match.
-- Parameters: ids bigint[].
-- Transition: none (read only).
-- Index: jobs_pkey.
SELECT id, run_lease, state
FROM awa.jobs
WHERE id = ANY(%(ids)s::bigint[])
