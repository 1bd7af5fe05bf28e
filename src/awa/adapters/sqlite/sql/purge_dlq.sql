-- Purpose: delete the matching dead-letter entries. Parameters: queue, kind (NULL: any).
DELETE FROM awa_dlq WHERE (:queue IS NULL OR queue = :queue) AND (:kind IS NULL OR kind = :kind)
