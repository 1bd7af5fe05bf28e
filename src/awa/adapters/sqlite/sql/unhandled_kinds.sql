-- Purpose: pending jobs due now grouped by (queue, kind) where no unlapsed worker record of
--   that queue lists the kind, with how many and the oldest run_at.
-- Parameters: now (us). Index: jobs_claim_idx's partial predicate (pending jobs).
SELECT j.queue, j.kind, count(*), min(j.run_at)
FROM awa_jobs AS j
WHERE j.state IN ('available', 'scheduled', 'retryable') AND j.run_at <= :now
  AND NOT EXISTS (
    SELECT 1 FROM awa_workers AS w, json_each(w.kinds) AS k
    WHERE w.queue = j.queue AND w.expires_at > :now AND k.value = j.kind)
GROUP BY j.queue, j.kind
ORDER BY j.queue, j.kind
