-- Columns, types and keys are exactly those of the duroxide 0.2.2 Postgres
-- schema, so that the released runtime works unchanged on them. Indexes are
-- our own (taskhub_* names). Times: *_ms, locked_until, locked_at and
-- last_activity_at are Unix epoch milliseconds; other *_at are timestamptz.
-- The orchestration lease: at most one live lease per instance.
CREATE TABLE __SCHEMA__.instance_locks (
    instance_id  text   NOT NULL PRIMARY KEY,
    lock_token   text   NOT NULL,
    locked_until bigint NOT NULL,
    locked_at    bigint NOT NULL,
    -- Ours (revision 0029): the steering of the turn, from its messages,
    -- written by the fetch and read by the ack with the lease, for the
    -- work the turn queues (docs/flow-control.md).
    taskhub_priority smallint,
    taskhub_labels   text[],
    -- And the instance's orchestration, for the flow rules by orchestration
    -- that hold the work the turn queues for itself.
    taskhub_orchestration text
);
-- Ack, abandon and renew look leases up by token.
CREATE UNIQUE INDEX taskhub_instance_locks_token_idx ON __SCHEMA__.instance_locks (lock_token);
CREATE INDEX taskhub_instance_locks_until_idx ON __SCHEMA__.instance_locks (locked_until);
-- Vacuumed by dead rows, not by size, and never throttled: a churn table,
-- however large its backlog (revision 0021, docs/ops.md "Maintenance").
ALTER TABLE __SCHEMA__.instance_locks SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0
);
