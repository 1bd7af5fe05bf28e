-- Purpose: drop a worker's record (it stopped, or is about to record itself anew).
-- Parameters: owner.
DELETE FROM awa_workers WHERE owner = :owner
