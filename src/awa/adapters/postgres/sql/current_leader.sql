-- Purpose: who holds a leadership now (tests and diagnostics); no row when it is free.
-- Parameters: now (timestamptz, NULL = the database clock), name text.
-- Transition: none (read only).
-- Index: leader_pkey.
SELECT owner FROM awa.leader
WHERE name = %(name)s AND expires_at > coalesce(%(now)s::timestamptz, now())
