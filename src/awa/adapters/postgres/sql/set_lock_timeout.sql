-- Purpose: bound how long the rest of this transaction waits for a row lock: the retry of a
--   batched write's held rows (PostgresStore, held_row_wait_s), which must not wait out the
--   statement timeout for a row some other session keeps.
-- Parameters: lock_timeout text (milliseconds, e.g. '1000ms').
-- Transition: none (a setting local to the transaction: `set_config(..., true)`).
-- Index: none.
SELECT set_config('lock_timeout', %(lock_timeout)s, true)
