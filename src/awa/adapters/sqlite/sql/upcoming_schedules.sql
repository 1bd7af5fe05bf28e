-- Purpose: up to `limit` unpaused schedules, earliest next fire first.
-- Parameters: limit. Index: schedules_next_fire_idx.
SELECT {schedule_columns} FROM awa_schedules WHERE paused = 0
ORDER BY next_fire_at, name
LIMIT :limit
