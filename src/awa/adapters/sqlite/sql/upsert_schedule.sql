-- Purpose: add or replace one schedule (registered, paused or resumed: the domain decided).
-- Parameters: every schedule column, by name.
INSERT OR REPLACE INTO awa_schedules ({schedule_columns}) VALUES ({schedule_params})
