-- Purpose: the first `limit` runnable jobs of each priority of one queue that pass the
--   ordering filter, for a claim with priority aging: the domain orders them
--   (decisions.claim_order) and takes `limit`. Within one priority the runnable ones come
--   first in (run_at, id) order, aged or not, so these hold the first `limit` overall.
-- Parameters: queue, now (us), limit. Transition: row 3 follows, in the domain.
-- Index: jobs_claim_idx (queue, priority, run_at, id), one range per priority; the filter's
--   (part ordering_free) only for jobs with an ordering key.
SELECT * FROM (
    SELECT {j.job_columns} FROM awa_jobs AS j
    WHERE j.queue = :queue AND j.priority = 1 AND j.run_at <= :now
      AND j.state IN ('available', 'scheduled', 'retryable') AND {part:ordering_free}
    ORDER BY j.run_at, j.id LIMIT :limit)
UNION ALL SELECT * FROM (
    SELECT {j.job_columns} FROM awa_jobs AS j
    WHERE j.queue = :queue AND j.priority = 2 AND j.run_at <= :now
      AND j.state IN ('available', 'scheduled', 'retryable') AND {part:ordering_free}
    ORDER BY j.run_at, j.id LIMIT :limit)
UNION ALL SELECT * FROM (
    SELECT {j.job_columns} FROM awa_jobs AS j
    WHERE j.queue = :queue AND j.priority = 3 AND j.run_at <= :now
      AND j.state IN ('available', 'scheduled', 'retryable') AND {part:ordering_free}
    ORDER BY j.run_at, j.id LIMIT :limit)
UNION ALL SELECT * FROM (
    SELECT {j.job_columns} FROM awa_jobs AS j
    WHERE j.queue = :queue AND j.priority = 4 AND j.run_at <= :now
      AND j.state IN ('available', 'scheduled', 'retryable') AND {part:ordering_free}
    ORDER BY j.run_at, j.id LIMIT :limit)
