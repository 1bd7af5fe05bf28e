-- Purpose: one dead-letter entry. Parameters: id.
SELECT {job_columns}, dlq_reason, dlq_at FROM awa_dlq WHERE id = :id
