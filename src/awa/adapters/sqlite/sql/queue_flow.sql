-- Purpose: a queue's flow limits, the rate bucket the last claim left (NULL: full) and its
--   turn cursor, for a claim deciding under them (awa.adapters.core.flow.within_limits). The
--   claim's BEGIN IMMEDIATE transaction holds the file's write lock from its start, so this
--   read is the lock: no other claim of the queue can count live attempts, take tokens or
--   take a turn until it ends.
-- Parameters: queue. Index: the primary key.
SELECT concurrency_limit, rate_per_second, rate_burst, rate_tokens, rate_updated_at,
       key_concurrency_limit, key_rate_per_second, key_rate_burst, turn_cursor, turn_taken
FROM awa_queues
WHERE queue = :queue
