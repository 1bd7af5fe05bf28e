-- Purpose: THE LEASE GUARD: the jobs whose (id, run_lease) is among the requested leases,
--   with their queue's dead-letter setting. A lease with no row here owns nothing.
-- Parameters: leases (JSON array of [id, run_lease] pairs).
-- Transition: none; the state half of the guard is the domain's (the transition table).
-- Index: the primary key. The transaction holds the write lock (BEGIN IMMEDIATE).
SELECT DISTINCT {j.job_columns}, coalesce(q.dlq_enabled, 0)
FROM json_each(:leases) AS l
JOIN awa_jobs AS j
  ON j.id = json_extract(l.value, '$[0]') AND j.run_lease = json_extract(l.value, '$[1]')
LEFT JOIN awa_queues AS q ON q.queue = j.queue
