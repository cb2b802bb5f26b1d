-- taskhub-pg settings an operator may change with plain SQL.
CREATE TABLE __SCHEMA__.taskhub_settings (
    name        text PRIMARY KEY,
    value       text NOT NULL,
    description text NOT NULL,
    CONSTRAINT taskhub_settings_transient_failure_policy_check
        CHECK (name <> 'transient_failure_policy' OR value IN ('retry', 'record'))
);
INSERT INTO __SCHEMA__.taskhub_settings (name, value, description)
VALUES ('dead_letter_after_attempts', '50',
        'A message handed out this many times is moved to dead_letters instead of being handed '
        'out again. Keep it well above the runtime''s max_attempts (10 by default), so that the '
        'runtime''s own poison handling comes first.'),
       ('transient_failure_policy', 'retry',
        'What ack_orchestration_item does with a turn that records a transient database failure of '
        'the provider (a terminated backend, a restart, a timeout, a deadlock, ...): ''retry'' gives '
        'the turn back for redelivery and logs it in shielded_failures; ''record'' commits the '
        'failure, as duroxide-pg does.');
