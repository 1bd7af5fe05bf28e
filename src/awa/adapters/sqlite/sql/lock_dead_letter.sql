-- Purpose: one dead-lettered job. Parameters: id. Index: the primary key.
SELECT {job_columns} FROM awa_dlq WHERE id = :id
