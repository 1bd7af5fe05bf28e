-- Purpose: take or renew a leadership (awa: 'maintenance') for `ttl`; returns a row exactly
--   when `owner` leads afterwards.
-- Parameters: now (timestamptz, NULL = the database clock), name text, owner text,
--   ttl interval.
-- Transition: none (coordination). One statement: the upsert takes a free name, and its
--   guard lets the update through only when the holder's lease expired or the holder is the
--   caller (a renewal). Concurrent callers queue on the row; the guard is re-checked on the
--   newest row version, so exactly one of them wins an expired leadership.
-- Time: the update's guard and new expiry read the clock once the row is locked (the
--   `DO UPDATE` part runs after the wait for a concurrent caller), not at the statement's
--   start: a renewal that waited does not lapse that much sooner.
-- Index: leader_pkey.
INSERT INTO awa.leader AS l (name, owner, expires_at)
SELECT %(name)s, %(owner)s, t.now + %(ttl)s::interval
FROM (SELECT coalesce(%(now)s::timestamptz, clock_timestamp()) AS now) AS t
ON CONFLICT (name) DO UPDATE
SET owner = excluded.owner,
    expires_at = coalesce(%(now)s::timestamptz, clock_timestamp()) + %(ttl)s::interval
WHERE l.owner = excluded.owner
   OR l.expires_at <= coalesce(%(now)s::timestamptz, clock_timestamp())
RETURNING l.owner
