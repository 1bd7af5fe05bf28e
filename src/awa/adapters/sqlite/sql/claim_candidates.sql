-- Purpose: the first `limit` runnable jobs of one queue in claim order (priority, run_at, id)
--   that pass the ordering filter, for a claim without priority aging.
-- Parameters: queue, now (us), limit. Transition: row 3 follows, in the domain
--   (decisions.claim), written back in the same BEGIN IMMEDIATE transaction.
-- Index: jobs_claim_idx (queue, priority, run_at, id): read in its order, no sort; the
--   filter's (part ordering_free) only for jobs with an ordering key.
SELECT {j.job_columns} FROM awa_jobs AS j
WHERE j.queue = :queue AND j.run_at <= :now AND j.state IN ('available', 'scheduled', 'retryable')
  AND {part:ordering_free}
ORDER BY j.priority, j.run_at, j.id
LIMIT :limit
