-- Purpose: SQLite's change counter for this connection: it moves when another connection
--   commits, so an idle listener learns that nothing happened without reading any table.
-- Parameters: none.
PRAGMA data_version
