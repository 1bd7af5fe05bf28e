-- Purpose: every queue's settings. Parameters: none.
-- Columns: the part settings_columns.
SELECT {part:settings_columns}
FROM awa_queues
