-- Purpose: claim like claim.sql, in the order of priority aging: up to `limit` runnable jobs of
--   one unpaused queue without flow limits (the guard, as in claim.sql), passed by the ordering
--   filter (ordering_free.sqlpart), by (effective
--   priority, run_at, id), where the effective priority is the priority less one step per
--   `aging_us` microseconds waited since run_at, at least 1
--   (awa.domain.decisions.effective_priority; integer arithmetic on both sides).
-- Parameters: now (timestamptz, NULL = the database clock), queue text, limit int,
--   aging_us bigint (> 0), deadline (interval, NULL = no deadline).
-- Transition: row 3 (claim_picked.sqlpart), after row 2 for due scheduled/retryable jobs.
-- Time: as claim.sql, the time the statement runs (`clock_timestamp()`, read once in `t`).
-- Index: jobs_claim_idx (queue, priority, run_at, id), once per priority 1-4 (the range the
--   jobs_priority_range constraint allows): within one priority the oldest job is also the most
--   aged, so the first `limit` of each priority hold the first `limit` overall, and the
--   candidates are at most 4 × limit rows, whatever the backlog. Each priority's scan locks
--   its candidates (SKIP LOCKED as in claim.sql, and FOR UPDATE re-checks the claimable state):
--   the ordering step then only ranks locked rows, and the ones it leaves out are let go when
--   the claim commits. Locking in the scans keeps a state condition out of any lookup by id,
--   which would let the planner read all of jobs_hot_claim_idx (claim_picked.sqlpart). The
--   ordering filter as claim.sql's.
WITH {part:claim_now}, candidates AS (
    SELECT c.id, c.priority, c.run_at
    FROM t
    CROSS JOIN generate_series(1, 4) AS p(priority)
    CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.run_at
        FROM awa.jobs AS j
        WHERE j.queue = %(queue)s
          AND {part:band_window}
    ) AS c
    WHERE NOT EXISTS (SELECT 1 FROM awa.queues AS q
                      WHERE q.queue = %(queue)s
                        AND (q.paused OR q.concurrency_limit IS NOT NULL
                             OR q.rate_per_second IS NOT NULL
                             OR q.key_concurrency_limit IS NOT NULL
                             OR q.key_rate_per_second IS NOT NULL))
), picked AS (
    SELECT c.id
    FROM candidates AS c
    CROSS JOIN t
    ORDER BY greatest(1, c.priority - (extract(epoch FROM t.now - c.run_at) * 1000000)::bigint
                                      / %(aging_us)s::bigint),
             c.run_at, c.id
    LIMIT %(limit)s
)
{part:claim_picked}
