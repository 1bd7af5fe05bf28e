-- Purpose: the schedules of these names that exist. Parameters: names (JSON array).
SELECT {schedule_columns} FROM awa_schedules
WHERE name IN (SELECT value FROM json_each(:names))
