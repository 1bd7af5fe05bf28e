-- Purpose: claim up to `limit` runnable jobs of one unpaused queue without flow limits for new
--   attempts, passed by the ordering filter (ordering_free.sqlpart: a job with an ordering key
--   only as its key's head): the fast path, one statement. A queue with a concurrency or rate
--   limit, of its own or per key, claims nothing here (the guard); its claims take the queue's row lock first (lock_queue_flow.sql,
--   PostgresStore._claim_limited), and a claim that skipped that lock could start an attempt
--   the limit forbids. The guard reads the queue's current row, so a worker that still thinks
--   a queue unlimited cannot overrun its new limit.
-- Parameters: now (timestamptz, NULL = the database clock), queue text, limit int,
--   deadline (interval, NULL = no deadline).
-- Transition: row 3 (available → running), after row 2 for due scheduled/retryable jobs
--   (claim_picked.sqlpart: the values of awa.domain.decisions.claim).
--   An available job's run_at is never after the time it became available (insert, promote,
--   retry all set run_at <= now), so `run_at <= now` selects exactly the claimable jobs.
-- Time: `clock_timestamp()` as the statement runs, not `now()`: a claim held back by a table
--   lock (a migration, `LOCK TABLE`, a long DDL) began seconds before it took effect, and
--   stamping that start as the attempt's first heartbeat had rescue find the attempts stale
--   the moment the lock went. `t` is a CTE: read once, one time for every row. SKIP LOCKED
--   waits for no row, so nothing holds the statement back once it runs.
-- Index: jobs_claim_idx (queue, priority, run_at, id) WHERE state IN (available, scheduled,
--   retryable); SKIP LOCKED lets concurrent claimers take disjoint rows. jobs_ordering_idx and
--   jobs_ordering_live_idx for the ordering filter, for the jobs with an ordering key only.
WITH {part:claim_now}, picked AS (
    SELECT j.id
    FROM awa.jobs AS j, t
    WHERE j.queue = %(queue)s
      AND {part:runnable_now}
      AND NOT EXISTS (SELECT 1 FROM awa.queues AS q
                      WHERE q.queue = %(queue)s
                        AND (q.paused OR q.concurrency_limit IS NOT NULL
                             OR q.rate_per_second IS NOT NULL
                             OR q.key_concurrency_limit IS NOT NULL
                             OR q.key_rate_per_second IS NOT NULL))
    ORDER BY j.priority, j.run_at, j.id
    LIMIT %(limit)s
    FOR UPDATE OF j SKIP LOCKED
)
{part:claim_picked}
