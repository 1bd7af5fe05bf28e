-- Purpose: delete a schedule; the row count says whether there was one. A process that
--   registers it again (at its next start) brings it back.
-- Parameters: name text.
-- Transition: none (its jobs already inserted stay).
-- Index: schedules_pkey.
DELETE FROM awa.schedules WHERE name = %(name)s
