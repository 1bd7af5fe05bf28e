-- Purpose: one queue's settings (no row: it has none of its own), read inside configure_queue's
--   BEGIN IMMEDIATE transaction, which the change is then applied to (SettingsChange.applied_to).
-- Parameters: queue. Columns: the part settings_columns. Index: the primary key.
SELECT {part:settings_columns}
FROM awa_queues
WHERE queue = :queue
