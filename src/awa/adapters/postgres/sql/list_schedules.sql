-- Purpose: every schedule, by name (`awa cron list`, client.list_periodic()).
-- Parameters: none.
-- Transition: none (read only).
-- Index: schedules_pkey.
SELECT {schedule_columns}
FROM awa.schedules
ORDER BY name
