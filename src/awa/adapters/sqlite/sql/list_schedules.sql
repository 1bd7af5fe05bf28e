-- Purpose: every schedule, by name. Parameters: none.
SELECT {schedule_columns} FROM awa_schedules ORDER BY name
