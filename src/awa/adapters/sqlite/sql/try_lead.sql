-- Purpose: take or renew a leadership (awa: 'maintenance') until `expires_at`; returns a row
--   exactly when `owner` leads afterwards.
-- Parameters: name, owner, now, expires_at (us).
-- Transition: none (coordination). The upsert takes a free name; its guard lets the update
--   through only when the holder's row expired or the holder is the caller (a renewal).
--   Writers are serialised by the database lock, so one caller wins an expired leadership.
INSERT INTO awa_leader (name, owner, expires_at) VALUES (:name, :owner, :expires_at)
ON CONFLICT (name) DO UPDATE
SET owner = excluded.owner, expires_at = excluded.expires_at
WHERE awa_leader.owner = excluded.owner OR awa_leader.expires_at <= :now
RETURNING owner
