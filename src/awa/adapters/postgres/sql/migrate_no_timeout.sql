-- Purpose: lift the store's statement timeout for the migrating transaction only: a
-- migration (or the wait for another migrator's lock) may rightly take longer than a store
-- call. SET LOCAL ends with the transaction, so a caller's connection keeps its own setting.
-- Parameters: none. Transition: none. Index: none.
SET LOCAL statement_timeout = 0
