-- Purpose: the newest migration applied (NULL: none yet).
-- Parameters: none. Transition: none.
SELECT max(version) FROM awa_schema_version
