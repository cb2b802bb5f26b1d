-- Every failure given back instead of committed, for operators.
CREATE TABLE __SCHEMA__.shielded_failures (
    id            bigserial   PRIMARY KEY,
    instance_id   text        NOT NULL,
    execution_id  bigint      NOT NULL,
    operation     text        NOT NULL,   -- the provider operation that failed
    condition     text        NOT NULL,   -- see taskhub_transient_conditions
    message       text        NOT NULL,   -- as the runtime recorded it
    attempt_count integer     NOT NULL,   -- deliveries of the turn so far
    retry_after_ms bigint     NOT NULL,   -- how long its messages stay back
    shielded_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX shielded_failures_shielded_at_idx ON __SCHEMA__.shielded_failures (shielded_at);
CREATE INDEX shielded_failures_instance_idx ON __SCHEMA__.shielded_failures (instance_id);
