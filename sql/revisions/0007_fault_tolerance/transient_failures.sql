-- taskhub-pg 0007: a transient database failure never fails an orchestration.
--
-- When its ack fails, the duroxide runtime acks again, with the same lock
-- token, a turn that ends the orchestration: OrchestrationFailed with
-- Infrastructure details naming the provider operation and the error. It does
-- so for errors it considers permanent, which include a terminated backend
-- (57P01), a statement timeout and a serialization failure. The failed ack
-- rolled back, so nothing of the turn was written and its lease still holds:
-- ack_orchestration_item gives such a turn back for redelivery instead of
-- committing the failure (taskhub_shield_transient_failure), and records it here.

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

INSERT INTO __SCHEMA__.taskhub_settings (name, value, description)
VALUES ('transient_failure_policy', 'retry',
        'What ack_orchestration_item does with a turn that records a transient database failure of '
        'the provider (a terminated backend, a restart, a timeout, a deadlock, ...): ''retry'' gives '
        'the turn back for redelivery and logs it in shielded_failures; ''record'' commits the '
        'failure, as duroxide-pg does.')
ON CONFLICT (name) DO NOTHING;
ALTER TABLE __SCHEMA__.taskhub_settings
    ADD CONSTRAINT taskhub_settings_transient_failure_policy_check
    CHECK (name <> 'transient_failure_policy' OR value IN ('retry', 'record'));

