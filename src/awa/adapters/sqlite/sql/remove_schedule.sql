-- Purpose: delete one schedule. Parameters: name.
DELETE FROM awa_schedules WHERE name = :name
