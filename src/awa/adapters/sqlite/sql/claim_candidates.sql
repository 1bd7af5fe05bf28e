-- Purpose: the first `limit` runnable jobs of one queue in claim order (priority, run_at, id),
--   for a claim without priority aging.
-- Parameters: queue, now (us), limit. Transition: row 3 follows, in the domain
--   (decisions.claim), written back in the same BEGIN IMMEDIATE transaction.
-- Index: jobs_claim_idx (queue, priority, run_at, id): read in its order, no sort.
SELECT {job_columns} FROM awa_jobs
WHERE queue = :queue AND run_at <= :now AND state IN ('available', 'scheduled', 'retryable')
ORDER BY priority, run_at, id
LIMIT :limit
