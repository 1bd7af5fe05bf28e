-- Purpose: the fire's compare-and-set: move a schedule from the next fire its plan read to
--   the following one, only if it is still there and not paused. A changed row means this
--   caller fires; the caller then inserts the fire's jobs in the same transaction.
-- Parameters: name, expected_next, following, last_fire, now (us).
UPDATE awa_schedules
SET next_fire_at = :following, last_fire_at = :last_fire, updated_at = :now
WHERE name = :name AND paused = 0 AND next_fire_at = :expected_next
