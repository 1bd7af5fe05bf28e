-- Purpose: the transaction's time, when no statement of it has read the time yet.
-- Parameters: now (timestamptz, NULL = the database clock).
-- Transition: none (read only).
-- Index: none.
SELECT coalesce(%(now)s::timestamptz, now())
