-- Purpose: the queue summary as last counted (no row: never counted). Parameters: none.
SELECT counted_at, window_s, states, dead FROM awa_queue_summary
