-- Purpose: keep the counts of count_queue_states.sql with count_finished_states.sql, and of
--   count_dead_letters.sql, as the queue summary, replacing the last one (queue_summary.sql
--   reads it).
-- Parameters: counted_at timestamptz, window_s float, states jsonb, dead jsonb (the groups as
--   arrays, see migration 0007).
-- Transition: none (writes the one row of awa.queue_summary).
-- Index: queue_summary_pkey.
INSERT INTO awa.queue_summary AS s (only_row, counted_at, window_s, states, dead)
VALUES (true, %(counted_at)s, %(window_s)s, %(states)s::jsonb, %(dead)s::jsonb)
ON CONFLICT (only_row) DO UPDATE
SET counted_at = excluded.counted_at, window_s = excluded.window_s,
    states = excluded.states, dead = excluded.dead
