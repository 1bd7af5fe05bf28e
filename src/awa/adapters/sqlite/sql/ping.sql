-- Purpose: one cheap read that also proves the schema is there. Parameters: none.
SELECT count(*) FROM awa_schema_version
