-- Purpose: kinds runnable now (pending, run_at <= now) on a queue where no unlapsed worker
--   row lists them, with how many and since when, by queue and kind.
-- Parameters: now (timestamptz, NULL = the database clock).
-- Transition: none (read only).
-- Index: jobs_claim_idx (its predicate is the pending states); workers_pkey is small and
--   scanned. An operator query.
WITH t AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
)
SELECT j.queue, j.kind, count(*) AS runnable, min(j.run_at) AS oldest_run_at
FROM awa.jobs AS j, t
WHERE j.state IN ('available', 'scheduled', 'retryable')
  AND j.run_at <= t.now
  AND NOT EXISTS (
      SELECT 1 FROM awa.workers AS w
      WHERE w.queue = j.queue AND j.kind = ANY (w.kinds) AND w.expires_at > t.now)
GROUP BY j.queue, j.kind
ORDER BY j.queue, j.kind
