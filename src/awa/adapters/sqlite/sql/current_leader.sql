-- Purpose: who holds a leadership now (no row: nobody). Parameters: name, now (us).
SELECT owner FROM awa_leader WHERE name = :name AND expires_at > :now
