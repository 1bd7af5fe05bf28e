-- Purpose: until the transaction ends, price sequential scans out of its plans
--   (count_finished_states.sql: the finished jobs are never read whole, however large a share
--   of them the summary's window holds; see that statement).
-- Parameters: none.
-- Transition: none.
-- Index: none; a planner setting, undone at COMMIT or ROLLBACK.
SET LOCAL enable_seqscan = off
