-- taskhub-pg 0029: restart an ended instance (docs/runbook, "An orchestration
-- failed"): the record of every restart (sql/head/tables/taskhub_restarts.sql says
-- what it holds).
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
