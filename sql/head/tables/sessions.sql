-- Columns, types and keys are exactly those of the duroxide 0.2.2 Postgres
-- schema, so that the released runtime works unchanged on them. Indexes are
-- our own (taskhub_* names). Times: *_ms, locked_until, locked_at and
-- last_activity_at are Unix epoch milliseconds; other *_at are timestamptz.
-- Session affinity: which worker owns a session, and until when.
CREATE TABLE __SCHEMA__.sessions (
    session_id       text   NOT NULL PRIMARY KEY,
    worker_id        text   NOT NULL,
    locked_until     bigint NOT NULL,
    last_activity_at bigint NOT NULL
);
CREATE INDEX taskhub_sessions_worker_idx ON __SCHEMA__.sessions (worker_id);
