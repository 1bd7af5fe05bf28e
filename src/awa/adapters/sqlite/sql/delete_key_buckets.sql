-- Purpose: forget every key bucket of one queue, so each key starts full: configure_queue was
--   given its key_rate_limit (even the same one, or None).
-- Parameters: queue. Transition: none. Index: the primary key (queue, key), one range.
DELETE FROM awa_key_buckets WHERE queue = :queue
