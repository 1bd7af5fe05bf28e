-- Purpose: the first `limit` runnable jobs of each priority of one queue, for a claim with
--   priority aging: the domain orders them (decisions.claim_order) and takes `limit`. Within
--   one priority the runnable ones come first in (run_at, id) order, aged or not, so these
--   hold the first `limit` overall.
-- Parameters: queue, now (us), limit. Transition: row 3 follows, in the domain.
-- Index: jobs_claim_idx (queue, priority, run_at, id), one range per priority.
SELECT * FROM (
    SELECT {job_columns} FROM awa_jobs
    WHERE queue = :queue AND priority = 1 AND run_at <= :now
      AND state IN ('available', 'scheduled', 'retryable')
    ORDER BY run_at, id LIMIT :limit)
UNION ALL SELECT * FROM (
    SELECT {job_columns} FROM awa_jobs
    WHERE queue = :queue AND priority = 2 AND run_at <= :now
      AND state IN ('available', 'scheduled', 'retryable')
    ORDER BY run_at, id LIMIT :limit)
UNION ALL SELECT * FROM (
    SELECT {job_columns} FROM awa_jobs
    WHERE queue = :queue AND priority = 3 AND run_at <= :now
      AND state IN ('available', 'scheduled', 'retryable')
    ORDER BY run_at, id LIMIT :limit)
UNION ALL SELECT * FROM (
    SELECT {job_columns} FROM awa_jobs
    WHERE queue = :queue AND priority = 4 AND run_at <= :now
      AND state IN ('available', 'scheduled', 'retryable')
    ORDER BY run_at, id LIMIT :limit)
