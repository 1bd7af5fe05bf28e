-- Purpose: drop records of workers that stopped renewing them. Parameters: now (us).
DELETE FROM awa_workers WHERE expires_at <= :now
