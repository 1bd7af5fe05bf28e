-- Purpose: the queue summary's dead-letter groups: entries by (queue, kind, reason), the
--   latest dlq_at, and how many arrived within (since, now].
-- Parameters: now, since (us).
SELECT queue, kind, dlq_reason, count(*), max(dlq_at),
       count(CASE WHEN dlq_at > :since AND dlq_at <= :now THEN 1 END)
FROM awa_dlq
GROUP BY queue, kind, dlq_reason
