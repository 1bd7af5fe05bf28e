-- Migration 0007: the queue summary.
--
-- One row: every queue's job counts by state (with how many ended within a window) and the
-- dead-letter queue's counts by queue, kind and reason, as the maintenance leader last counted
-- them (count_queue_states.sql, count_dead_letters.sql, keep_queue_summary.sql). Readers that
-- must not count the job table on every request, the dashboard and metrics, read this row
-- instead (queue_summary.sql). The groups are kept as JSON arrays: the row is written whole
-- and read whole, never queried inside.

CREATE TABLE awa.queue_summary (
    only_row   boolean          PRIMARY KEY DEFAULT true,
    counted_at timestamptz      NOT NULL,
    window_s   double precision NOT NULL,
    -- [[queue, state, count, oldest_available_at, ended], ...]
    states     jsonb            NOT NULL,
    -- [[queue, kind, reason, count, latest_dlq_at, ended], ...]
    dead       jsonb            NOT NULL,
    CONSTRAINT queue_summary_one_row CHECK (only_row),
    CONSTRAINT queue_summary_window_positive CHECK (window_s > 0),
    CONSTRAINT queue_summary_states_array CHECK (jsonb_typeof(states) = 'array'),
    CONSTRAINT queue_summary_dead_array CHECK (jsonb_typeof(dead) = 'array')
);
