-- Migration 0008: awa.jobs' name checks without a bounded repetition.
--
-- `kind ~ '^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$'` has PostgreSQL's regex engine run a repetition
-- unrolled 127 times for every row written: the two checks (kind and queue) were about half the
-- database's CPU of a bulk insert (13 us of 7 us without them, per row copied). The same rule
-- written as `*` and a length passes and refuses exactly the same names
-- (awa.domain.validation's _KIND and _NAME), at the cost of the other checks. Only awa.jobs is
-- written at that rate; the other tables keep their checks as 0001, 0005 and 0006 wrote them.
-- Adding the checks reads the table once, under the lock the migration holds anyway.
ALTER TABLE awa.jobs
    DROP CONSTRAINT jobs_kind_valid,
    DROP CONSTRAINT jobs_queue_valid,
    ADD CONSTRAINT jobs_kind_valid
        CHECK (kind ~ '^[A-Za-z_][A-Za-z0-9_.:-]*$' AND length(kind) <= 128),
    ADD CONSTRAINT jobs_queue_valid
        CHECK (queue ~ '^[a-z0-9_][a-z0-9_.:-]*$' AND length(queue) <= 128);
