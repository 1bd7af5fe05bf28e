-- Purpose: flow_candidates.sql for a queue with key limits, once lock_queue_flow.sql holds the
--   queue's row: THE KEYED WINDOW, the first `limit` runnable jobs in claim order of EACH
--   concurrency_key and the first `limit` of the jobs without one, passed by the ordering
--   filter (ordering_free.sqlpart), locked, and the queue's live attempts counted. The first
--   `limit` overall could all be one key's (a key with 10,000 old jobs would fill every window
--   while its limit holds them all back), and the keys behind it would starve; within a key
--   its first `limit` are enough, as a claim grants at most `limit` and a key's jobs in claim
--   order (awa.domain.flow_claims). The key-less jobs are not capped at the key limit.
-- Parameters: now (timestamptz, NULL = the database clock), queue text, limit int.
-- Transition: none by itself (as flow_candidates.sql: claim_granted.sql does row 3).
-- Why after the lock, and the guard: as flow_candidates.sql.
-- Order: the rows come unordered; the store sorts them by awa.domain.decisions.claim_order.
-- Cost: at most (keys + 1) × limit rows locked, the ones not granted let go at COMMIT; the keys
--   with runnable jobs are found by stepping through jobs_key_claim_idx from one key to the
--   next (`keys`, one descent per key), whatever the backlog of each.
-- Index: jobs_key_claim_idx (queue, concurrency_key, priority, run_at, id) over the runnable
--   jobs with a concurrency key (0014) for `keys` and each key's window; jobs_claim_idx for the
--   jobs without one; jobs_live_queue_idx for the count.
WITH RECURSIVE {part:claim_now}, {part:live_attempts}, {part:runnable_keys}, keyed AS (
    SELECT c.*
    FROM keys AS k
    CROSS JOIN t
    CROSS JOIN LATERAL (
        SELECT {j.job_columns}
        FROM awa.jobs AS j
        WHERE j.queue = %(queue)s
          AND j.concurrency_key = k.key
          AND {part:runnable_now}
        ORDER BY j.priority, j.run_at, j.id
        LIMIT %(limit)s
        FOR UPDATE OF j SKIP LOCKED
    ) AS c
    WHERE k.key IS NOT NULL
), keyless AS (
    SELECT {j.job_columns}
    FROM awa.jobs AS j, t
    WHERE {part:keyless_window}
)
SELECT t.now, live.n, p.*
FROM t, live, (SELECT * FROM keyed UNION ALL SELECT * FROM keyless) AS p
