-- Purpose: delete dead-letter entries by id (they were locked earlier in the transaction).
-- Parameters: ids bigint[].
-- Transition: row 20 (the entry leaves the DLQ as its job is restored) or row 21 (purge).
-- Index: dlq_pkey.
DELETE FROM awa.dlq WHERE id = ANY(%(ids)s::bigint[])
