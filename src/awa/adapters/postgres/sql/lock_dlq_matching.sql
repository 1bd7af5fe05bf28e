-- Purpose: lock every dead-letter entry matching the filters, in (dlq_at, id) order.
-- Parameters: now (timestamptz, NULL = the database clock), queue text, kind text (NULL = any;
--   the store refuses an empty filter unless all=True before running this).
-- Transition: first half of row 20 for many jobs (bulk retry).
-- Index: dlq_queue_kind_idx (queue, kind, dlq_at, id) or dlq_at_idx when unfiltered.
SELECT coalesce(%(now)s::timestamptz, now()) AS now,
       {d.job_columns}
FROM awa.dlq AS d
WHERE (%(queue)s::text IS NULL OR d.queue = %(queue)s::text)
  AND (%(kind)s::text IS NULL OR d.kind = %(kind)s::text)
ORDER BY d.dlq_at, d.id
FOR UPDATE
