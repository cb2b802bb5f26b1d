-- Messages that were handed out too often: kept here, with why and since
-- when, until an operator requeues (taskhub_requeue_dead_letter) or deletes them.
CREATE TABLE __SCHEMA__.dead_letters (
    id                  bigserial   PRIMARY KEY,
    source_queue        text        NOT NULL CHECK (source_queue IN ('orchestrator', 'worker')),
    original_id         bigint      NOT NULL,
    instance_id         text,
    work_item           text        NOT NULL,
    attempt_count       integer     NOT NULL,
    reason              text        NOT NULL,
    original_created_at timestamptz NOT NULL,
    dead_at             timestamptz NOT NULL DEFAULT now(),
    execution_id        bigint,
    activity_id         bigint,
    session_id          text,
    tag                 text
);
CREATE INDEX taskhub_dead_letters_instance_idx
    ON __SCHEMA__.dead_letters (instance_id);
