-- Every restart of an ended instance (taskhub_restart_instance: taskhub-pg
-- restart, Client.restart, the dashboard's restart): which instance, from
-- which execution and outcome, into which instance and execution, with what
-- input, who and why. A restart under the same id runs the instance's next
-- execution (new_instance_id = instance_id); its earlier executions stay as
-- they were, readable as the instance's history. A restart under a new id
-- starts that instance; the old one stays as it was, and this row links
-- them. Written only by taskhub_restart; deleted with either instance
-- (delete_instances_atomic, taskhub_prune_ended: the ended run's output and
-- input go with its history).
CREATE TABLE __SCHEMA__.taskhub_restarts (
    id                bigserial   PRIMARY KEY,
    instance_id       text        NOT NULL,
    from_execution_id bigint      NOT NULL,
    from_status       text        NOT NULL,
    -- The ended execution's output: its result, or why it failed.
    from_output       text,
    new_instance_id   text        NOT NULL,
    new_execution_id  bigint      NOT NULL,
    input             text,
    restarted_at      timestamptz NOT NULL,
    restarted_by      text        NOT NULL,
    reason            text
);
-- A request repeated finds its restart by the instance (taskhub_restart);
-- a deleted instance's restarts go with it (by either id).
CREATE INDEX taskhub_restarts_instance_idx ON __SCHEMA__.taskhub_restarts (instance_id);
CREATE INDEX taskhub_restarts_new_idx ON __SCHEMA__.taskhub_restarts (new_instance_id);
