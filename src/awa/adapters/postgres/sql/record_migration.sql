-- Purpose: record one applied migration in the ledger.
-- Parameters: version int, name text, checksum text.
-- Transition: none. Index: schema_version_pkey.
INSERT INTO awa.schema_version (version, name, checksum)
VALUES (%(version)s, %(name)s, %(checksum)s)
