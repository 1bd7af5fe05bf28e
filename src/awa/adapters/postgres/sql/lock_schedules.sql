-- Purpose: lock the schedules of these names that exist (registering, pausing, triggering).
-- Parameters: now (timestamptz, NULL = the database clock), names text[].
-- Transition: none by itself; awa.domain.periodic decides what changes.
-- Time: read after the locks ({part:time_after_locks}).
-- Index: schedules_pkey.
WITH locked AS MATERIALIZED (
    SELECT {schedule_columns}
    FROM awa.schedules
    WHERE name = ANY (%(names)s::text[])
    ORDER BY name
    FOR UPDATE
), {part:time_after_locks}
SELECT t.now, l.*
FROM t, locked AS l
ORDER BY l.name
