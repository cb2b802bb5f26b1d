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
    -- Revision 0029: one schedule that cannot start stops no other. Its fires
    -- that failed in a row (a success, a change or a resume sets it back to
    -- 0), why the latest failed, and why the scheduler paused it after
    -- schedule_pause_after_failures of them (NULL: not paused by failures).
    failures      integer     NOT NULL DEFAULT 0,
    last_error    text,
    paused_reason text,
    -- Revision 0029: the steering each tick's instance starts with
    -- (docs/flow-control.md): its priority and its labels ('key=value', in
    -- key order, as taskhub_check_steering gives them).
    priority      smallint    NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 9),
    labels        text[]      NOT NULL DEFAULT '{}',
    -- Revision 0029: the latest tick that started an instance, and that
    -- instance (NULL: none yet). last_tick_at also moves for a tick
    -- skipped, and is the schedule's creation or resume before any tick.
    last_started_tick timestamptz,
    last_instance_id  text,
    CONSTRAINT a_schedule_has_a_cron_expression_or_an_interval
        CHECK ((cron IS NULL) <> (every_ms IS NULL))
);
