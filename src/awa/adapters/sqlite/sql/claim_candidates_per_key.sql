-- Purpose: a keyed queue's candidates without priority aging: the first `limit` runnable jobs
--   of each concurrency_key, and of the jobs without one, in claim order (priority, run_at,
--   id), that pass the ordering filter. The first `limit` overall could be one key's jobs only
--   while the keys behind it wait with their limits free (awa.adapters.core.flow).
-- Parameters: queue, now (us), limit. Transition: row 3 follows, in the domain, for those
--   awa.adapters.core.flow.within_limits grants.
-- Index: jobs_claim_key_idx (queue, concurrency_key, priority, run_at, id): each key's jobs
--   in the window's order; the filter's (part ordering_free) only for jobs with an ordering
--   key, before the numbering, so a held follower takes no place of its key's.
SELECT {job_columns} FROM (
    SELECT {j.job_columns},
           row_number() OVER (PARTITION BY j.concurrency_key
                              ORDER BY j.priority, j.run_at, j.id) AS place
    FROM awa_jobs AS j
    WHERE j.queue = :queue AND j.run_at <= :now
      AND j.state IN ('available', 'scheduled', 'retryable') AND {part:ordering_free})
WHERE place <= :limit
