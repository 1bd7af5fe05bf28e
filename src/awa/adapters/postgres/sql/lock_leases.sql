-- Purpose: THE LEASE GUARD for every fenced write (heartbeat, finish, register_callback).
--   Locks and returns the live jobs whose (id, run_lease) the caller still owns. A requested
--   lease with no row here is stale; nothing else in the write path compares leases, so this
--   statement alone decides ownership (the write-back runs on the rows locked here).
-- Parameters: now (timestamptz, NULL = the database clock), ids bigint[], leases bigint[]
--   (pairs: the attempts the caller claims to own).
-- Transition: none by itself; guards rows 4-10 and the state-keeping heartbeat and
--   register-callback moves. State must be live (running, waiting_external); the domain's
--   transition table then decides which of those the move allows.
-- Index: jobs_pkey. Rows are locked in id order so concurrent batches cannot deadlock.
SELECT coalesce(%(now)s::timestamptz, now()) AS now,
       g.run_lease AS requested_lease,
       coalesce(q.dlq_enabled, false) AS dlq_enabled,
       j.id, j.kind, j.queue, j.args, j.state, j.priority, j.attempt, j.max_attempts,
       j.run_lease, j.run_at, j.created_at, j.tags, j.metadata, j.errors, j.attempted_at,
       j.heartbeat_at, j.deadline_at, j.finalized_at, j.progress, j.callback_id,
       j.callback_timeout_at, j.callback_result
FROM (SELECT DISTINCT g.id, g.run_lease
      FROM unnest(%(ids)s::bigint[], %(leases)s::bigint[]) AS g(id, run_lease)) AS g
JOIN awa.jobs AS j
  ON j.id = g.id
 AND j.run_lease = g.run_lease
 AND j.state IN ('running', 'waiting_external')
LEFT JOIN awa.queues AS q ON q.queue = j.queue
ORDER BY j.id
FOR UPDATE OF j
