-- Columns, types and keys are exactly those of the duroxide 0.2.2 Postgres
-- schema, so that the released runtime works unchanged on them. Indexes are
-- our own (taskhub_* names). Times: *_ms, locked_until, locked_at and
-- last_activity_at are Unix epoch milliseconds; other *_at are timestamptz.
-- Activity executions. One row is one work item with its own lease.
CREATE TABLE __SCHEMA__.worker_queue (
    id            bigserial   PRIMARY KEY,
    work_item     text        NOT NULL,
    visible_at    timestamptz NOT NULL,
    lock_token    text,
    locked_until  bigint,
    created_at    timestamptz NOT NULL,
    attempt_count integer     NOT NULL DEFAULT 0,
    instance_id   text,
    execution_id  bigint,
    activity_id   bigint,
    session_id    text,
    tag           text,
    -- Ours, not duroxide's (revision 0029): the activity's name, written by
    -- the functions that queue an item, for flow control (fetch_work_item).
    -- NULL on a row written otherwise: the fetch reads such a row's name from
    -- work_item when a rule needs it (taskhub_activity_name_of).
    taskhub_activity_name text,
    -- Ours too (revision 0029): the steering of the instance that queued the
    -- item (docs/flow-control.md). NULL on a row without any: priority 0,
    -- no labels, ranked by visible_at.
    taskhub_priority      smallint,
    taskhub_labels        text[],
    -- The name of the orchestration that queued the item, which its
    -- completion's message carries (orchestrator_queue.sql says why).
    taskhub_orchestration text,
    -- When a fetch may take the item ahead of others: visible_at less the
    -- head start of its priority (taskhub_rank_of). NULL: visible_at.
    taskhub_rank          timestamptz
);
-- The fetch walks this one: by rank, then id (fetch_work_item).
CREATE INDEX taskhub_worker_rank_idx
    ON __SCHEMA__.worker_queue ((coalesce(taskhub_rank, visible_at)), (id + 0));
-- Cancellation deletes the rows of scheduled activities by identity.
CREATE INDEX taskhub_worker_activity_idx
    ON __SCHEMA__.worker_queue (instance_id, execution_id, activity_id);
CREATE INDEX taskhub_worker_session_idx
    ON __SCHEMA__.worker_queue (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX taskhub_worker_tag_idx
    ON __SCHEMA__.worker_queue (tag) WHERE tag IS NOT NULL;
-- No index holds lock_token or locked_until, so the fetch's lease tag is a HOT
-- update: ack, renew and abandon find an item by the id its token names
-- (taskhub_worker_item_of_token, revision 0021).
-- Payloads stay in the row (MAIN): reading a history costs no TOAST lookup
-- per event; lz4, where the server has it, decompresses faster than pglz.
ALTER TABLE __SCHEMA__.worker_queue ALTER COLUMN work_item SET STORAGE MAIN;
DO $lz4$
BEGIN
    IF 'lz4' = ANY (SELECT unnest(enumvals) FROM pg_catalog.pg_settings
                     WHERE name = 'default_toast_compression') THEN
        ALTER TABLE __SCHEMA__.worker_queue ALTER COLUMN work_item SET COMPRESSION lz4;
    END IF;
END
$lz4$;
-- Vacuumed by dead rows, not by size, and never throttled: a churn table,
-- however large its backlog (revision 0021, docs/ops.md "Maintenance").
ALTER TABLE __SCHEMA__.worker_queue SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0
);
