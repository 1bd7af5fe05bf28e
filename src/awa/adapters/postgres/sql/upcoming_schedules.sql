-- Purpose: the maintenance leader's look at the schedules: the time, and up to `limit` active
--   schedules, earliest next fire first (the due ones come first; the first one not due says
--   when to look again). Reads only: a plan is applied by fire_schedule.sql's compare-and-set.
-- Parameters: now (timestamptz, NULL = the database clock), limit int.
-- Transition: none (read only).
-- Index: schedules_next_fire_idx (next_fire_at, name) WHERE NOT paused.
SELECT t.now, {s.schedule_columns}
FROM (SELECT coalesce(%(now)s::timestamptz, now()) AS now) AS t
LEFT JOIN LATERAL (
    SELECT * FROM awa.schedules
    WHERE NOT paused
    ORDER BY next_fire_at, name
    LIMIT %(limit)s
) AS s ON true
