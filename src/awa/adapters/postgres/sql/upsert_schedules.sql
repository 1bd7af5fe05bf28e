-- Purpose: write schedules back (added or changed), by name. A changed schedule was locked by
--   this transaction and keeps its created_at, so its row is updated. A new one that another
--   process registered at the same moment (so it was not there to lock) is left as that
--   process stored it: its created_at differs, and overwriting its next fire could move it
--   back past a fire the leader already enqueued.
-- Parameters: one array per column of _rows.SCHEDULE_COLUMNS (JSON as text), all the same
--   length.
-- Transition: none of the job table's (awa.domain.periodic.register, set_paused).
-- Index: schedules_pkey.
INSERT INTO awa.schedules AS s ({schedule_columns})
SELECT r.name, r.cron, r.timezone, r.missed_fire_policy, r.kind, r.queue, r.args::jsonb,
       r.priority, r.max_attempts, ARRAY(SELECT jsonb_array_elements_text(r.tags::jsonb)),
       r.metadata::jsonb, r.unique_options::jsonb, r.paused, r.next_fire_at, r.last_fire_at,
       r.created_at, r.updated_at, r.concurrency_key, r.ordering_key
FROM unnest(%(name)s::text[], %(cron)s::text[], %(timezone)s::text[],
            %(missed_fire_policy)s::text[], %(kind)s::text[], %(queue)s::text[],
            %(args)s::text[], %(priority)s::int[], %(max_attempts)s::int[], %(tags)s::text[],
            %(metadata)s::text[], %(unique_options)s::text[], %(paused)s::boolean[],
            %(next_fire_at)s::timestamptz[], %(last_fire_at)s::timestamptz[],
            %(created_at)s::timestamptz[], %(updated_at)s::timestamptz[],
            %(concurrency_key)s::text[], %(ordering_key)s::text[])
     AS r({schedule_columns})
ON CONFLICT (name) DO UPDATE
SET cron = excluded.cron, timezone = excluded.timezone,
    missed_fire_policy = excluded.missed_fire_policy, kind = excluded.kind,
    queue = excluded.queue, args = excluded.args, priority = excluded.priority,
    max_attempts = excluded.max_attempts, tags = excluded.tags, metadata = excluded.metadata,
    unique_options = excluded.unique_options, paused = excluded.paused,
    next_fire_at = excluded.next_fire_at, last_fire_at = excluded.last_fire_at,
    updated_at = excluded.updated_at, concurrency_key = excluded.concurrency_key,
    ordering_key = excluded.ordering_key
WHERE s.created_at = excluded.created_at
