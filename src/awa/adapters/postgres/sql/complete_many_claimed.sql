-- Purpose: complete_many.sql for a batch whose every finish carries the job as its worker
--   claimed it (the runtime's batches): only the columns an attempt can change come back, the
--   rest (args, tags, kind, ...) are taken from the claimed job, so a completion no longer
--   reads back and decodes every job's args.
-- Parameters: now, ids, leases, metadata, as complete_running.sqlpart.
-- Transition: row 4 (running → completed), as complete_running.sqlpart; the lease guard is
--   there.
-- Index: jobs_hot_live_idx or jobs_hot_pkey, bounded by the batch's ids
--   (complete_running.sqlpart).
{part:complete_running}
RETURNING {j.attempt_columns}
