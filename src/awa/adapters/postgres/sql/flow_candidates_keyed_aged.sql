-- Purpose: flow_candidates_keyed.sql in the order of priority aging (claim_aged.sql's): THE
--   KEYED WINDOW, the first `limit` runnable jobs by (effective priority, run_at, id) of each
--   concurrency_key and of the jobs without one, passed by the ordering filter
--   (ordering_free.sqlpart), locked, with the queue's live attempts counted.
-- Parameters: now (timestamptz, NULL = the database clock), queue text, limit int (the aging
--   step is the store's to rank with: awa.domain.decisions.claim_order).
-- Transition: none by itself (as flow_candidates.sql).
-- Why after the lock, and the guard: as flow_candidates.sql.
-- Order: the rows come unordered, unranked: within one priority the oldest job is also the
--   most aged, so each key's first `limit` of each priority (4 × limit at most) hold its first
--   `limit` in aged order, and the store sorts them (awa.domain.decisions.claim_order).
-- Cost: at most (keys + 1) × 4 × limit rows locked, the ones not granted let go at COMMIT;
--   the keys found as in flow_candidates_keyed.sql.
-- Index: jobs_key_claim_idx for the keys and each key's window, once per priority;
--   jobs_claim_idx once per priority for the jobs without a key; jobs_live_queue_idx.
WITH RECURSIVE {part:claim_now}, {part:live_attempts}, {part:runnable_keys}, keyed AS (
    SELECT c.*
    FROM keys AS k
    CROSS JOIN t
    CROSS JOIN generate_series(1, 4) AS p(priority)
    CROSS JOIN LATERAL (
        SELECT {j.job_columns}
        FROM awa.jobs AS j
        WHERE j.queue = %(queue)s
          AND j.concurrency_key = k.key
          AND {part:band_window}
    ) AS c
    WHERE k.key IS NOT NULL
), keyless AS (
    SELECT c.*
    FROM t
    CROSS JOIN generate_series(1, 4) AS p(priority)
    CROSS JOIN LATERAL (
        SELECT {j.job_columns}
        FROM awa.jobs AS j
        WHERE j.queue = %(queue)s
          AND j.concurrency_key IS NULL
          AND {part:band_window}
    ) AS c
)
SELECT t.now, live.n, p.*
FROM t, live, (SELECT * FROM keyed UNION ALL SELECT * FROM keyless) AS p
