-- taskhub-pg 0001: the task-hub tables.
--
-- Columns, types and keys are exactly those of the duroxide 0.2.2 Postgres
-- schema, so the released runtime works unchanged on top of them. Tables are
-- created only where missing: a schema duroxide created is adopted as it is,
-- rows included. Indexes are our own (taskhub_* names, so that they never
-- clash with an adopted schema's). Times: *_ms, locked_until, locked_at, last_activity_at are Unix
-- epoch milliseconds; the other *_at columns are timestamptz.

CREATE TABLE IF NOT EXISTS __SCHEMA__.instances (
    instance_id           text        NOT NULL PRIMARY KEY,
    orchestration_name    text        NOT NULL,
    orchestration_version text,
    current_execution_id  bigint      NOT NULL DEFAULT 1,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    parent_instance_id    text,
    custom_status         text,
    custom_status_version integer     NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS taskhub_instances_parent_idx
    ON __SCHEMA__.instances (parent_instance_id) WHERE parent_instance_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS __SCHEMA__.executions (
    instance_id            text        NOT NULL,
    execution_id           bigint      NOT NULL,
    status                 text        NOT NULL DEFAULT 'Running',
    output                 text,
    started_at             timestamptz NOT NULL,
    completed_at           timestamptz,
    duroxide_version_major integer,
    duroxide_version_minor integer,
    duroxide_version_patch integer,
    PRIMARY KEY (instance_id, execution_id)
);

CREATE TABLE IF NOT EXISTS __SCHEMA__.history (
    instance_id  text        NOT NULL,
    execution_id bigint      NOT NULL,
    event_id     bigint      NOT NULL,
    event_type   text        NOT NULL,
    event_data   text        NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (instance_id, execution_id, event_id)
);

-- Messages that trigger orchestration turns. A message is claimed by the
-- instance lease that tags it (lock_token / locked_until mirror instance_locks).
CREATE TABLE IF NOT EXISTS __SCHEMA__.orchestrator_queue (
    id            bigserial   PRIMARY KEY,
    instance_id   text        NOT NULL,
    work_item     text        NOT NULL,
    visible_at    timestamptz NOT NULL,
    lock_token    text,
    locked_until  bigint,
    created_at    timestamptz NOT NULL,
    attempt_count integer     NOT NULL DEFAULT 0
);
-- Candidate selection walks this index from the oldest visible message.
CREATE INDEX IF NOT EXISTS taskhub_orch_visible_idx ON __SCHEMA__.orchestrator_queue (visible_at, id);
-- Claiming all messages of one instance.
CREATE INDEX IF NOT EXISTS taskhub_orch_instance_idx ON __SCHEMA__.orchestrator_queue (instance_id, id);
-- Ack, abandon and renew find the messages a lease tagged.
CREATE INDEX IF NOT EXISTS taskhub_orch_lock_idx
    ON __SCHEMA__.orchestrator_queue (lock_token) WHERE lock_token IS NOT NULL;

-- Activity executions. One row is one work item with its own lease.
CREATE TABLE IF NOT EXISTS __SCHEMA__.worker_queue (
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
    tag           text
);
CREATE INDEX IF NOT EXISTS taskhub_worker_visible_idx ON __SCHEMA__.worker_queue (visible_at, id);
-- Cancellation deletes the rows of scheduled activities by identity.
CREATE INDEX IF NOT EXISTS taskhub_worker_activity_idx
    ON __SCHEMA__.worker_queue (instance_id, execution_id, activity_id);
CREATE INDEX IF NOT EXISTS taskhub_worker_session_idx
    ON __SCHEMA__.worker_queue (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS taskhub_worker_tag_idx
    ON __SCHEMA__.worker_queue (tag) WHERE tag IS NOT NULL;
CREATE INDEX IF NOT EXISTS taskhub_worker_lock_idx
    ON __SCHEMA__.worker_queue (lock_token) WHERE lock_token IS NOT NULL;

-- The orchestration lease: at most one live lease per instance.
CREATE TABLE IF NOT EXISTS __SCHEMA__.instance_locks (
    instance_id  text   NOT NULL PRIMARY KEY,
    lock_token   text   NOT NULL,
    locked_until bigint NOT NULL,
    locked_at    bigint NOT NULL
);
-- Ack, abandon and renew look leases up by token.
CREATE UNIQUE INDEX IF NOT EXISTS taskhub_instance_locks_token_idx ON __SCHEMA__.instance_locks (lock_token);
CREATE INDEX IF NOT EXISTS taskhub_instance_locks_until_idx ON __SCHEMA__.instance_locks (locked_until);

-- Session affinity: which worker owns a session, and until when.
CREATE TABLE IF NOT EXISTS __SCHEMA__.sessions (
    session_id       text   NOT NULL PRIMARY KEY,
    worker_id        text   NOT NULL,
    locked_until     bigint NOT NULL,
    last_activity_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS taskhub_sessions_worker_idx ON __SCHEMA__.sessions (worker_id);

-- Key-value state committed at execution boundaries.
CREATE TABLE IF NOT EXISTS __SCHEMA__.kv_store (
    instance_id        text   NOT NULL,
    key                text   NOT NULL,
    value              text   NOT NULL,
    execution_id       bigint NOT NULL,
    last_updated_at_ms bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (instance_id, key)
);
CREATE INDEX IF NOT EXISTS taskhub_kv_store_execution_idx ON __SCHEMA__.kv_store (instance_id, execution_id);

-- Key-value changes of the current execution; a NULL value is a deletion.
CREATE TABLE IF NOT EXISTS __SCHEMA__.kv_delta (
    instance_id        text   NOT NULL,
    key                text   NOT NULL,
    value              text,
    last_updated_at_ms bigint NOT NULL,
    PRIMARY KEY (instance_id, key)
);

-- The duroxide runtime runs its own migration runner on every connect and
-- applies every version it knows that this ledger lacks. taskhub-pg provides
-- the whole schema, so the ledger records every version duroxide 0.2.2 knows:
-- the runtime then finds nothing to apply and never replaces our functions.
CREATE TABLE IF NOT EXISTS __SCHEMA__._duroxide_migrations (
    version    bigint NOT NULL PRIMARY KEY,
    name       text   NOT NULL,
    applied_at timestamptz DEFAULT CURRENT_TIMESTAMP
);
INSERT INTO __SCHEMA__._duroxide_migrations (version, name)
SELECT v, format('%s_provided_by_taskhub_pg', lpad(v::text, 4, '0'))
  FROM unnest(ARRAY[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                    18, 19, 20, 21, 23, 25]) AS v
ON CONFLICT (version) DO NOTHING;

-- taskhub-pg settings an operator may change with plain SQL.
CREATE TABLE IF NOT EXISTS __SCHEMA__.taskhub_settings (
    name        text PRIMARY KEY,
    value       text NOT NULL,
    description text NOT NULL
);
INSERT INTO __SCHEMA__.taskhub_settings (name, value, description)
VALUES ('dead_letter_after_attempts', '50',
        'A message handed out this many times is moved to dead_letters instead of being handed '
        'out again. Keep it well above the runtime''s max_attempts (10 by default), so that the '
        'runtime''s own poison handling comes first.')
ON CONFLICT (name) DO NOTHING;

-- Messages that were handed out too often: kept here, with why and since
-- when, until an operator requeues (taskhub_requeue_dead_letter) or deletes them.
CREATE TABLE IF NOT EXISTS __SCHEMA__.dead_letters (
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
CREATE INDEX IF NOT EXISTS taskhub_dead_letters_instance_idx
    ON __SCHEMA__.dead_letters (instance_id);
