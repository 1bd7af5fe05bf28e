-- Purpose: how many dead-letter entries each queue holds. Parameters: none.
SELECT queue, count(*) FROM awa_dlq GROUP BY queue
