-- Purpose: a keyed queue's candidates with priority aging: the first `limit` runnable jobs of
--   each concurrency_key (and of the jobs without one) and priority that pass the ordering
--   filter. Within one key and priority the runnable ones come first in (run_at, id) order,
--   aged or not, so these hold each key's first `limit` in decisions.claim_order; the domain
--   orders them.
-- Parameters: queue, now (us), limit. Transition: row 3 follows, in the domain, for those
--   awa.adapters.core.flow.within_limits grants.
-- Index: jobs_claim_key_idx (queue, concurrency_key, priority, run_at, id): each key's and
--   priority's jobs in the window's order; the filter's (part ordering_free) only for jobs
--   with an ordering key, before the numbering.
SELECT {job_columns} FROM (
    SELECT {j.job_columns},
           row_number() OVER (PARTITION BY j.concurrency_key, j.priority
                              ORDER BY j.run_at, j.id) AS place
    FROM awa_jobs AS j
    WHERE j.queue = :queue AND j.run_at <= :now
      AND j.state IN ('available', 'scheduled', 'retryable') AND {part:ordering_free})
WHERE place <= :limit
