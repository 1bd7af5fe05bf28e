-- Purpose: a keyed queue's candidates with priority aging: the first `limit` runnable jobs of
--   each concurrency_key (and of the jobs without one) and priority that pass the ordering
--   filter. Within one key and priority the runnable ones come first in (run_at, id) order,
--   aged or not, so these hold each key's first `limit` in decisions.claim_order; the domain
--   orders them.
-- Parameters: queue, now (us), limit. Transition: row 3 follows, in the domain, for those
--   awa.adapters.core.flow.within_limits grants.
-- Index: jobs_claim_key_idx (queue, concurrency_key, priority, run_at, id): the keys by a skip
--   scan (part claim_keys), then one range per key and priority, read until `limit` pass the
--   filter (part ordering_free, only for jobs with an ordering key). `IS`: the NULL row reads
--   the key-less jobs' ranges.
WITH RECURSIVE {part:claim_keys},
bands (priority) AS (VALUES (1), (2), (3), (4))
SELECT {chosen.job_columns} FROM keys CROSS JOIN bands JOIN awa_jobs AS chosen ON chosen.id IN (
    SELECT j.id FROM awa_jobs AS j
    WHERE j.queue = :queue AND j.concurrency_key IS keys.key AND j.priority = bands.priority
      AND j.run_at <= :now AND j.state IN ('available', 'scheduled', 'retryable')
      AND {part:ordering_free}
    ORDER BY j.run_at, j.id
    LIMIT :limit)
