-- Purpose: the transaction's time, when no statement of it has read the time yet: the time
--   this statement runs (`clock_timestamp()`), after whatever the transaction waited for
--   before it, not the transaction's start (`now()`).
-- Parameters: now (timestamptz, NULL = the database clock).
-- Transition: none (read only).
-- Index: none.
SELECT coalesce(%(now)s::timestamptz, clock_timestamp())
