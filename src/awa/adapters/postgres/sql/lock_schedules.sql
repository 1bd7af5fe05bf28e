-- Purpose: lock the schedules of these names that exist (registering, pausing, triggering).
-- Parameters: now (timestamptz, NULL = the database clock), names text[].
-- Transition: none by itself; awa.domain.periodic decides what changes.
-- Index: schedules_pkey.
SELECT coalesce(%(now)s::timestamptz, now()) AS now,
       {schedule_columns}
FROM awa.schedules
WHERE name = ANY (%(names)s::text[])
ORDER BY name
FOR UPDATE
