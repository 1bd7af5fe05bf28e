-- Purpose: note one applied migration in the ledger.
-- Parameters: version, name, checksum (sha256 of its text), applied_at (us).
INSERT INTO awa_schema_version (version, name, checksum, applied_at)
VALUES (:version, :name, :checksum, :applied_at)
