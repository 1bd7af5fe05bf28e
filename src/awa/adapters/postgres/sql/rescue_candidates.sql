-- Purpose: lock up to `limit` live attempts that maintenance must end: heartbeat older than
--   the staleness limit, deadline passed, or callback timed out.
-- Parameters: now (timestamptz, NULL = the database clock), staleness (interval), limit int.
-- Transition: rows 14-16 (the domain's rescue_cause and decisions.rescue pick the cause and
--   apply the poison-job rule); this statement is the guard (live state + expiry) and holds
--   the rows locked for the write-back.
-- Index: jobs_live_idx (id) WHERE state IN (running, waiting_external): the live set is
--   bounded by the workers' concurrency. SKIP LOCKED lets several maintainers run at once.
SELECT t.now,
       coalesce(q.dlq_enabled, false) AS dlq_enabled,
       j.id, j.kind, j.queue, j.args, j.state, j.priority, j.attempt, j.max_attempts,
       j.run_lease, j.run_at, j.created_at, j.tags, j.metadata, j.errors, j.attempted_at,
       j.heartbeat_at, j.deadline_at, j.finalized_at, j.progress, j.callback_id,
       j.callback_timeout_at, j.callback_result
FROM (SELECT coalesce(%(now)s::timestamptz, now()) AS now) AS t
CROSS JOIN awa.jobs AS j
LEFT JOIN awa.queues AS q ON q.queue = j.queue
WHERE j.state IN ('running', 'waiting_external')
  AND ((j.state = 'running' AND (j.heartbeat_at < t.now - %(staleness)s::interval
                                 OR j.deadline_at < t.now))
       OR (j.state = 'waiting_external' AND j.callback_timeout_at < t.now))
ORDER BY j.id
LIMIT %(limit)s
FOR UPDATE OF j SKIP LOCKED
