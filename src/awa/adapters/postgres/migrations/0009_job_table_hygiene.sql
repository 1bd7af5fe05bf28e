-- Migration 0009: storage settings of the job table for a queue's churn.
--
-- Every job is inserted, updated at least twice (claim, finish) and deleted by retention, so
-- awa.jobs makes dead row versions at about twice the rate jobs are done. The server-wide
-- autovacuum defaults wait for dead rows to reach 20% of the table, which on a table holding a
-- day of finished jobs means millions of dead versions (and dead entries in jobs_claim_idx that
-- every claim steps over) before a vacuum starts. These per-table settings start it at 1% and
-- let it work ten times faster than the default cost limit; see docs/performance.md
-- ("An hour of steady load").
--
-- fillfactor 80 leaves a fifth of each new page free, so a row's next version fits on its own
-- page: a HOT update (no index touched) for the updates that change no indexed column
-- (heartbeat, progress, callback registration), and less page hopping for claim and finish,
-- which change `state` and so always write index entries.
--
-- Both apply to an existing table without rewriting it (fillfactor takes effect on pages
-- filled from now on) and take only a SHARE UPDATE EXCLUSIVE lock: inserts, claims and
-- finishes go on while it runs.

ALTER TABLE awa.jobs SET (
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_limit = 2000
);
