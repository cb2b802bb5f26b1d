-- taskhub-pg 0029: a schedule counts its failed fires in a row, keeps the
-- latest one's error, why the scheduler paused it, the priority and
-- labels its ticks start with, and the latest tick it started (columns as in
-- sql/head/tables/taskhub_schedules.sql). Safe under live load: a column with
-- a constant default, or none, is a change of the catalog alone (no rewrite,
-- no scan); the lock it takes is brief and declared (LOCKS_ON_UPGRADE).
ALTER TABLE __SCHEMA__.taskhub_schedules
    ADD COLUMN failures      integer NOT NULL DEFAULT 0,
    ADD COLUMN last_error    text,
    ADD COLUMN paused_reason text,
    ADD COLUMN priority      smallint NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 9),
    ADD COLUMN labels        text[]   NOT NULL DEFAULT '{}',
    ADD COLUMN last_started_tick timestamptz,
    ADD COLUMN last_instance_id  text;
