-- Purpose: every key bucket of a queue reset to full, when its key rate was given
--   (configure_queue.sql, in the same transaction and after it): a key without a row in
--   awa.flow_key_buckets is full.
-- Parameters: queue text.
-- Transition: none (queue setting).
-- Why after configure_queue.sql, in a statement of its own: that statement waits for the queue's
--   row lock, which every claim writing key buckets holds until it commits (lock_queue_flow.sql).
--   This statement's snapshot is taken after the lock was granted, so it sees every bucket
--   those claims wrote; a DELETE in the same statement as the upsert would read a snapshot
--   taken before the wait and miss a bucket a claim created meanwhile.
-- Index: flow_key_buckets_pkey (queue, key), the queue's range.
DELETE FROM awa.flow_key_buckets AS b
WHERE b.queue = %(queue)s
