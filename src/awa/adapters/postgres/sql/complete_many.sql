-- Purpose: the hot path of finish: complete many attempts in one statement. Used when every
--   outcome in a finish batch is Complete (and no job appears twice); other batches take the
--   general path (lock_leases.sql, the domain's decisions, write_jobs.sql).
-- Parameters: now (timestamptz, NULL = the database clock), ids bigint[], leases bigint[],
--   metadata text[] (JSON to merge into the job's metadata, NULL = none), all the same length.
-- Transition: row 4 (running → completed) with the values of awa.domain.decisions.finish for
--   Complete: finalized_at = now, progress cleared, deadline and callback fields cleared,
--   metadata shallow-merged. THE LEASE GUARD of this path: (id, run_lease, state = running);
--   requests it does not match are stale.
-- Index: jobs_pkey.
UPDATE awa.jobs AS j
SET state = 'completed',
    finalized_at = t.now,
    progress = NULL,
    deadline_at = NULL,
    callback_id = NULL,
    callback_timeout_at = NULL,
    metadata = CASE WHEN c.metadata IS NULL THEN j.metadata
                    ELSE j.metadata || c.metadata::jsonb END
FROM (SELECT coalesce(%(now)s::timestamptz, now()) AS now) AS t,
     unnest(%(ids)s::bigint[], %(leases)s::bigint[], %(metadata)s::text[])
         AS c(id, run_lease, metadata)
WHERE j.id = c.id
  AND j.run_lease = c.run_lease
  AND j.state = 'running'
RETURNING {j.job_columns}
