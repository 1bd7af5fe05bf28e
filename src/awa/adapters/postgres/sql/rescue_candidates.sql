-- Purpose: lock up to `limit` live attempts that maintenance must end: heartbeat older than
--   the staleness limit, deadline passed, or callback timed out.
-- Parameters: now (timestamptz, NULL = the database clock), staleness (interval), limit int.
-- Transition: rows 14-16 (the domain's rescue_cause and decisions.rescue pick the cause and
--   apply the poison-job rule); this statement is the guard (live state + expiry) and holds
--   the rows locked for the write-back.
-- Time: `clock_timestamp()` as the statement runs, not `now()`, the start of a statement that
--   may have waited for a table lock: rescue judges heartbeats by the time it decides, and the
--   claims and heartbeats it judges stamp theirs the same way. SKIP LOCKED waits for no row.
--   A CTE, read once: every row is judged against the same time.
-- Index: jobs_live_idx (id) WHERE state IN (running, waiting_external): the live set is
--   bounded by the workers' concurrency. SKIP LOCKED lets several maintainers run at once.
WITH {part:claim_now}
SELECT t.now,
       coalesce(q.dlq_enabled, false) AS dlq_enabled,
       {j.job_columns}
FROM t
CROSS JOIN awa.jobs AS j
LEFT JOIN awa.queues AS q ON q.queue = j.queue
WHERE j.state IN ('running', 'waiting_external')
  AND ((j.state = 'running' AND (j.heartbeat_at < t.now - %(staleness)s::interval
                                 OR j.deadline_at < t.now))
       OR (j.state = 'waiting_external' AND j.callback_timeout_at < t.now))
ORDER BY j.id
LIMIT %(limit)s
FOR UPDATE OF j SKIP LOCKED
