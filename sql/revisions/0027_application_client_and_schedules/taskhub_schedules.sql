-- Orchestrations started on a schedule (Client.set_schedule, taskhub-pg
-- schedule add). Each occurrence ("tick") is started once, whatever the
-- number of schedulers running, with the instance id
-- 'schedule:<name>:<tick in UTC>' (taskhub_fire_schedule).
CREATE TABLE __SCHEMA__.taskhub_schedules (
    name          text        PRIMARY KEY
                  CHECK (name <> '' AND octet_length(name) <= 200 AND strpos(name, ':') = 0),
    orchestration text        NOT NULL CHECK (orchestration <> ''),
    version       text,
    input         text        NOT NULL DEFAULT 'null',  -- the input as JSON text
    -- Either a cron expression (five fields, read in time_zone) or an
    -- interval; ticks of an interval are whole multiples of it since the epoch.
    cron          text        CHECK (cron <> ''),
    every_ms      bigint      CHECK (every_ms >= 1000 AND every_ms % 1000 = 0),
    time_zone     text        NOT NULL DEFAULT 'UTC',
    -- After downtime: 'skip' starts no occurrence due more than a minute
    -- ago; 'once' starts the latest one missed, once. Earlier ones never.
    missed        text        NOT NULL DEFAULT 'skip' CHECK (missed IN ('skip', 'once')),
    paused        boolean     NOT NULL DEFAULT false,
    -- The latest tick started or skipped: a scheduler starts only later ones.
    last_tick_at  timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT a_schedule_has_a_cron_expression_or_an_interval
        CHECK ((cron IS NULL) <> (every_ms IS NULL))
);
