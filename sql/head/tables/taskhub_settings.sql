-- taskhub-pg settings an operator may change with plain SQL; a value out of
-- range is refused by a check named for its rule (SQLSTATE 23514), nothing changed.
CREATE TABLE __SCHEMA__.taskhub_settings (
    name        text PRIMARY KEY,
    value       text NOT NULL,
    description text NOT NULL,
    CONSTRAINT taskhub_settings_transient_failure_policy_check
        CHECK (name <> 'transient_failure_policy' OR value IN ('retry', 'record')),
    -- A whole number, read as an integer by every fetch that redelivers; at
    -- least 2: with 1, a message given back once (a runtime restarting) would
    -- be dead-lettered.
    CONSTRAINT dead_letter_after_attempts_is_a_whole_number_of_2_or_more
        CHECK (name <> 'dead_letter_after_attempts'
               OR CASE WHEN value ~ '^[0-9]{1,9}$' THEN value::integer >= 2 ELSE false END),
    -- Revision 0029: read by taskhub_count_schedule_failure at each failure.
    CONSTRAINT schedule_pause_after_failures_is_a_whole_number_of_1_or_more
        CHECK (name <> 'schedule_pause_after_failures'
               OR CASE WHEN value ~ '^[0-9]{1,9}$' THEN value::integer >= 1 ELSE false END)
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
        'failure, as duroxide-pg does.'),
       ('schedule_pause_after_failures', '5',
        'A schedule whose fire fails this many times in a row (its start refused: too large, '
        'a conflicting instance, a cron expression or time zone the scheduler cannot read) is '
        'paused, with the reason in taskhub-pg schedule list and on the dashboard; the other '
        'schedules keep firing. A transient failure (a timeout, a lost connection) does not count.');
