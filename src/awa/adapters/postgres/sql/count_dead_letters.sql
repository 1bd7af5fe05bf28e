-- Purpose: the queue summary's second count: dead-letter entries by queue, kind and reason,
--   the latest arrival of each group, and how many arrived in (since, now].
-- Parameters: now timestamptz, since timestamptz.
-- Transition: none (read only).
-- Index: a sequential scan of awa.dlq (bounded by its retention), once per interval.
SELECT queue, kind, dlq_reason, count(*), max(dlq_at),
       count(*) FILTER (
           WHERE dlq_at > %(since)s::timestamptz AND dlq_at <= %(now)s::timestamptz
       )
FROM awa.dlq
GROUP BY queue, kind, dlq_reason
