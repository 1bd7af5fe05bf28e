-- Purpose: a keyed queue's candidates without priority aging: the first `limit` runnable jobs
--   of each concurrency_key, and of the jobs without one, in claim order (priority, run_at,
--   id), that pass the ordering filter. The first `limit` overall could be one key's jobs only
--   while the keys behind it wait with their limits free (awa.adapters.core.flow).
-- Parameters: queue, now (us), limit. Transition: row 3 follows, in the domain, for those
--   awa.adapters.core.flow.within_limits grants.
-- Index: jobs_claim_key_idx (queue, concurrency_key, priority, run_at, id): the keys by a skip
--   scan (part claim_keys), then each key's range in claim order, read until `limit` pass the
--   filter (part ordering_free, only for jobs with an ordering key): a key's many jobs beyond
--   its first few are never read. `IS`: the NULL row reads the key-less jobs' range.
WITH RECURSIVE {part:claim_keys}
SELECT {chosen.job_columns} FROM keys JOIN awa_jobs AS chosen ON chosen.id IN (
    SELECT j.id FROM awa_jobs AS j
    WHERE j.queue = :queue AND j.concurrency_key IS keys.key AND j.run_at <= :now
      AND j.state IN ('available', 'scheduled', 'retryable') AND {part:ordering_free}
    ORDER BY j.priority, j.run_at, j.id
    LIMIT :limit)
