-- Purpose: keep the counted groups as the queue summary, replacing the last one.
-- Parameters: counted_at (us), window_s, states, dead (JSON arrays).
INSERT INTO awa_queue_summary (only_row, counted_at, window_s, states, dead)
VALUES (1, :counted_at, :window_s, :states, :dead)
ON CONFLICT (only_row) DO UPDATE
SET counted_at = excluded.counted_at, window_s = excluded.window_s,
    states = excluded.states, dead = excluded.dead
