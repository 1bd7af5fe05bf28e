-- Purpose: a queue's flow limits and the rate bucket the last claim left (NULL: full), for a
--   claim deciding under them (awa.adapters.core.flow.within_limits). The claim's BEGIN
--   IMMEDIATE transaction holds the file's write lock from its start, so this read is the
--   lock: no other claim of the queue can count live attempts or take tokens until it ends.
-- Parameters: queue. Index: the primary key.
SELECT concurrency_limit, rate_per_second, rate_burst, rate_tokens, rate_updated_at
FROM awa_queues
WHERE queue = :queue
