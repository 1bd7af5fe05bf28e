-- Purpose: planner settings for every connection the store works on, set once per connection
--   (PostgresStore._connection), on a pool of its own or one passed in.
-- Parameters: none.
-- Transition: none.
-- Index: none. Every statement of the store is an ordered, bounded index scan or a lookup by
--   id. A bitmap scan reads every matching index entry before it returns a row; the planner
--   picks one when the statistics, taken while the queue was empty, say a claim matches one
--   row, and a claim behind 90,000 queued jobs then took 1.4 s (docs/performance.md, "An hour
--   of steady load"). JIT compilation costs tens of milliseconds a statement and is chosen
--   from the same estimates; none of these statements runs long enough to win it back.
SET jit = off;
SET enable_bitmapscan = off
