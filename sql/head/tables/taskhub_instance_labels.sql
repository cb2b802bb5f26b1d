-- The steering an instance was started with (docs/flow-control.md): its
-- priority, 0 (the default) to 9, and its labels, 'key=value' texts. A row
-- only for an instance started with either; written by the start
-- (taskhub_start_labeled_orchestration) and by the turn that starts a
-- sub-orchestration of a steered instance (ack_orchestration_item), read
-- when a message or an item is queued for the instance from outside its
-- turns (enqueue_orchestrator_work, enqueue_worker_work, an event from
-- another instance). The turns themselves carry it on their lease.
CREATE TABLE __SCHEMA__.taskhub_instance_labels (
    instance_id text        PRIMARY KEY,
    priority    smallint    NOT NULL CHECK (priority BETWEEN 0 AND 9),
    labels      text[]      NOT NULL,
    started_at  timestamptz NOT NULL
);
