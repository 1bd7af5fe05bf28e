-- Purpose: lock every dead-letter entry matching the filters, in (dlq_at, id) order.
-- Parameters: now (timestamptz, NULL = the database clock), queue text, kind text (NULL = any;
--   the store refuses an empty filter unless all=True before running this).
-- Transition: first half of row 20 for many jobs (bulk retry).
-- Index: dlq_queue_kind_idx (queue, kind, dlq_at, id) or dlq_at_idx when unfiltered.
SELECT coalesce(%(now)s::timestamptz, now()) AS now,
       d.id, d.kind, d.queue, d.args, d.state, d.priority, d.attempt, d.max_attempts,
       d.run_lease, d.run_at, d.created_at, d.tags, d.metadata, d.errors, d.attempted_at,
       d.heartbeat_at, d.deadline_at, d.finalized_at, d.progress, d.callback_id,
       d.callback_timeout_at, d.callback_result
FROM awa.dlq AS d
WHERE (%(queue)s::text IS NULL OR d.queue = %(queue)s::text)
  AND (%(kind)s::text IS NULL OR d.kind = %(kind)s::text)
ORDER BY d.dlq_at, d.id
FOR UPDATE
