-- Purpose: the second statement of a claim of a limited queue, once lock_queue_flow.sql holds
--   the queue's row: up to `limit` runnable jobs in claim.sql's order, passed by its ordering
--   filter (ordering_free.sqlpart), locked, and the queue's
--   live attempts counted, for awa.adapters.core.flow.within_limits to decide which may start.
-- Parameters: now (timestamptz, NULL = the database clock), queue text, limit int.
-- Transition: none by itself (the candidates are locked; claim_granted.sql does row 3 for the
--   ones granted; the others are let go at COMMIT).
-- Why a statement of its own, after the lock: under READ COMMITTED each statement reads a
--   snapshot taken when it starts. The lock statement's snapshot was taken before it waited,
--   so it may miss the attempts the previous holder of the lock committed; this statement
--   starts after the lock was granted, and its count sees every claim committed before, so the
--   limit holds whoever claimed last. The count is an upper bound until COMMIT: attempts can
--   end meanwhile, none can start (every claim of the queue waits for the lock, claim.sql
--   claims nothing here). `now` is read while this statement runs, after its snapshot: an
--   attempt counted as ended finished before the ones claimed with this `now` started.
-- Guard: none of claim.sql's: the row lock stands for it (lock_queue_flow.sql).
-- Index: jobs_claim_idx as claim.sql (the same scan, SKIP LOCKED, the same ordering filter),
--   jobs_live_queue_idx for the count.
WITH {part:claim_now}, {part:live_attempts}, picked AS (
    SELECT {j.job_columns}
    FROM awa.jobs AS j, t
    WHERE j.queue = %(queue)s
      AND {part:runnable_now}
    ORDER BY j.priority, j.run_at, j.id
    LIMIT %(limit)s
    FOR UPDATE OF j SKIP LOCKED
)
SELECT t.now, live.n, p.*
FROM t, live, picked AS p
ORDER BY p.priority, p.run_at, p.id
