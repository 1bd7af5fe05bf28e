-- Purpose: one queue of a worker's record: the kinds it handles there, until expires_at.
-- Parameters: owner, queue, kinds (JSON array), expires_at (us).
INSERT INTO awa_workers (owner, queue, kinds, expires_at)
VALUES (:owner, :queue, :kinds, :expires_at)
