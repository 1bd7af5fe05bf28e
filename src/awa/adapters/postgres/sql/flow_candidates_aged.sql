-- Purpose: flow_candidates.sql in the order of priority aging (claim_aged.sql's): up to
--   `limit` runnable jobs by (effective priority, run_at, id), passed by the ordering filter
--   (ordering_free.sqlpart), locked, with the queue's live
--   attempts counted.
-- Parameters: now (timestamptz, NULL = the database clock), queue text, limit int, aging_us
--   bigint (> 0).
-- Transition: none by itself (as flow_candidates.sql).
-- Why after the lock, and the guard: as flow_candidates.sql.
-- Order: the rows come unordered; the store sorts them by awa.domain.decisions.claim_order,
--   the same ranking as `picked`'s.
-- Index: jobs_claim_idx once per priority 1-4, locking in each scan, as claim_aged.sql: at
--   most 4 × limit rows locked, the ones not ranked let go at COMMIT; jobs_live_queue_idx.
WITH {part:claim_now}, {part:live_attempts}, candidates AS (
    SELECT c.*
    FROM t
    CROSS JOIN generate_series(1, 4) AS p(priority)
    CROSS JOIN LATERAL (
        SELECT {j.job_columns}
        FROM awa.jobs AS j
        WHERE j.queue = %(queue)s
          AND {part:band_window}
    ) AS c
), picked AS (
    SELECT c.*
    FROM candidates AS c
    CROSS JOIN t
    ORDER BY greatest(1, c.priority - (extract(epoch FROM t.now - c.run_at) * 1000000)::bigint
                                      / %(aging_us)s::bigint),
             c.run_at, c.id
    LIMIT %(limit)s
)
SELECT t.now, live.n, p.*
FROM t, live, picked AS p
