-- Migration 0005: periodic schedules.
--
-- One row per schedule (awa.domain.periodic.ScheduleRecord): the cron expression and time
-- zone, the job each fire inserts, the missed-fire policy, and the time of the next fire. The
-- maintenance leader fires a schedule with fire_schedule.sql, which moves next_fire_at on from
-- the value its plan read (a compare-and-set) in the statement that inserts the jobs, so a
-- fire is enqueued once even when two processes believe they lead.

CREATE TABLE awa.schedules (
    name               text        PRIMARY KEY,
    cron               text        NOT NULL,
    timezone           text        NOT NULL,
    missed_fire_policy text        NOT NULL,
    kind               text        NOT NULL,
    queue              text        NOT NULL,
    args               jsonb       NOT NULL DEFAULT '{}',
    priority           smallint    NOT NULL,
    max_attempts       smallint    NOT NULL,
    tags               text[]      NOT NULL DEFAULT '{}',
    metadata           jsonb       NOT NULL DEFAULT '{}',
    unique_options     jsonb,
    paused             boolean     NOT NULL DEFAULT false,
    next_fire_at       timestamptz NOT NULL,
    last_fire_at       timestamptz,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,

    CONSTRAINT schedules_name_valid CHECK (name ~ '^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$'),
    CONSTRAINT schedules_policy_valid CHECK (missed_fire_policy IN ('coalesce', 'catch_up')),
    CONSTRAINT schedules_kind_valid CHECK (kind ~ '^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$'),
    CONSTRAINT schedules_queue_valid CHECK (queue ~ '^[a-z0-9_][a-z0-9_.:-]{0,127}$'),
    CONSTRAINT schedules_priority_range CHECK (priority BETWEEN 1 AND 4),
    CONSTRAINT schedules_max_attempts_range CHECK (max_attempts BETWEEN 1 AND 1000),
    CONSTRAINT schedules_args_object CHECK (jsonb_typeof(args) = 'object'),
    CONSTRAINT schedules_metadata_object CHECK (jsonb_typeof(metadata) = 'object')
);

-- upcoming_schedules.sql: active schedules, earliest next fire first
CREATE INDEX schedules_next_fire_idx ON awa.schedules (next_fire_at, name) WHERE NOT paused;
