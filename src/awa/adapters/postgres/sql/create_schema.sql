-- Purpose: create the awa namespace. Parameters: none. Runs under migrate_lock.sql.
-- Transition: none. Index: none.
CREATE SCHEMA IF NOT EXISTS awa
