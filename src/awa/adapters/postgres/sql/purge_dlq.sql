-- Purpose: delete every dead-letter entry matching the filters; the row count is the answer.
-- Parameters: queue text, kind text (NULL = any; the store refuses an empty filter unless
--   all=True before running this).
-- Transition: row 21 (DLQ → ∅).
-- Index: dlq_queue_kind_idx, or a scan when unfiltered.
DELETE FROM awa.dlq
WHERE (%(queue)s::text IS NULL OR queue = %(queue)s::text)
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
