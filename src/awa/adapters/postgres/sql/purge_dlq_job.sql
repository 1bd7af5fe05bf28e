-- Purpose: delete one dead-letter entry; the row count says whether there was one.
-- Parameters: id bigint.
-- Transition: row 21 (DLQ → ∅) for one job.
-- Index: dlq_pkey.
DELETE FROM awa.dlq WHERE id = %(id)s
