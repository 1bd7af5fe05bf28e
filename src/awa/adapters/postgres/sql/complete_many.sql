-- Purpose: the hot path of finish: complete many attempts in one statement. Used when every
--   outcome in a finish batch is Complete (and no job appears twice) and some finish does not
--   carry its claimed job; other batches take the general path (lock_leases.sql, the domain's
--   decisions, write_jobs.sql).
-- Parameters: now, ids, leases, metadata, as complete_running.sqlpart.
-- Transition: row 4 (running → completed), as complete_running.sqlpart; the lease guard is
--   there.
-- Index: jobs_hot_live_idx or jobs_hot_pkey, bounded by the batch's ids
--   (complete_running.sqlpart).
{part:complete_running}
RETURNING {j.job_columns}
