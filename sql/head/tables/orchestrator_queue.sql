-- Columns, types and keys are exactly those of the duroxide 0.2.2 Postgres
-- schema, so that the released runtime works unchanged on them. Indexes are
-- our own (taskhub_* names). Times: *_ms, locked_until, locked_at and
-- last_activity_at are Unix epoch milliseconds; other *_at are timestamptz.
-- Messages that trigger orchestration turns. A message is claimed by the
-- instance lease that tags it (lock_token / locked_until mirror instance_locks).
CREATE TABLE __SCHEMA__.orchestrator_queue (
    id            bigserial   PRIMARY KEY,
    instance_id   text        NOT NULL,
    work_item     text        NOT NULL,
    visible_at    timestamptz NOT NULL,
    lock_token    text,
    locked_until  bigint,
    created_at    timestamptz NOT NULL,
    attempt_count integer     NOT NULL DEFAULT 0,
    -- Ours (revision 0029): the steering of the instance the message is for
    -- (docs/flow-control.md), and its rank (worker_queue.sql says how).
    -- NULL on a row without any: priority 0, no labels, ranked by visible_at.
    taskhub_priority smallint,
    taskhub_labels   text[],
    -- The name of the orchestration the message is for, where its writer
    -- knew it (a start, the instance's own work): a flow rule by
    -- orchestration (docs/flow-control.md) leaves it out of the fetch's scan.
    -- NULL: unknown; the fetch reads the instance's name when a rule needs
    -- it, and writes it here if it skips the turn.
    taskhub_orchestration text,
    taskhub_rank     timestamptz
);
-- The fetch walks this one: by rank, then id (fetch_orchestration_item).
CREATE INDEX taskhub_orch_rank_idx
    ON __SCHEMA__.orchestrator_queue ((coalesce(taskhub_rank, visible_at)), (id + 0));
-- A label set's messages by rank, and the sets one after another: the
-- fetch's lanes under a per-value limit (fetch_orchestration_item). Only
-- labelled messages: a hub without labels keeps none of it.
CREATE INDEX taskhub_orch_lane_idx
    ON __SCHEMA__.orchestrator_queue (taskhub_labels, (coalesce(taskhub_rank, visible_at)), (id + 0))
    WHERE taskhub_labels IS NOT NULL;
-- Claiming all messages of one instance; ack, abandon and renew find the
-- messages a lease tagged through it too (by instance, then token). No index
-- holds lock_token or locked_until, so the fetch's lease tag is a HOT update.
-- Its entries follow id order within an instance (the fetch reads a turn's
-- messages in that order); the id itself is id + 0, so that only the
-- primary key can serve a lookup by id (revision 0029).
CREATE INDEX taskhub_orch_instance_idx
    ON __SCHEMA__.orchestrator_queue (instance_id, (id + 0));
-- Payloads stay in the row (MAIN): reading a history costs no TOAST lookup
-- per event; lz4, where the server has it, decompresses faster than pglz.
ALTER TABLE __SCHEMA__.orchestrator_queue ALTER COLUMN work_item SET STORAGE MAIN;
DO $lz4$
BEGIN
    IF 'lz4' = ANY (SELECT unnest(enumvals) FROM pg_catalog.pg_settings
                     WHERE name = 'default_toast_compression') THEN
        ALTER TABLE __SCHEMA__.orchestrator_queue ALTER COLUMN work_item SET COMPRESSION lz4;
    END IF;
END
$lz4$;
-- Vacuumed by dead rows, not by size, and never throttled: a churn table,
-- however large its backlog (revision 0021, docs/ops.md "Maintenance").
ALTER TABLE __SCHEMA__.orchestrator_queue SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0
);
