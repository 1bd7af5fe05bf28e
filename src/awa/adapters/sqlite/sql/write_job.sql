-- Purpose: write back one job as the domain decided it, in the transaction that read it.
-- Parameters: id and every column a decision may change.
-- Transition: any decided row. The lease guard is not repeated here: the transaction holds
--   the database's write lock since BEGIN IMMEDIATE, so the row is as lock_leases.sql (or
--   the lock that read it) saw it.
UPDATE awa_jobs
SET state = :state, attempt = :attempt, run_lease = :run_lease, run_at = :run_at,
    errors = :errors, metadata = :metadata, progress = :progress,
    attempted_at = :attempted_at, heartbeat_at = :heartbeat_at, deadline_at = :deadline_at,
    finalized_at = :finalized_at, callback_id = :callback_id,
    callback_timeout_at = :callback_timeout_at, callback_result = :callback_result
WHERE id = :id
