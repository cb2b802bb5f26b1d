-- taskhub-pg settings an operator may change with plain SQL; a value out of
-- range is refused by a check named for its rule (SQLSTATE 23514), nothing
-- changed (schedule_pause_after_failures, below, is read as its default).
-- `taskhub-pg check` names a setting missing or out of range.
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
               OR CASE WHEN value ~ '^[0-9]{1,9}$' THEN value::integer >= 2 ELSE false END)
    -- schedule_pause_after_failures (revision 0029) has no check: adding one
    -- would lock this table, which every fetch reads, ahead of
    -- taskhub_schedules, which a live scheduler holds while it waits for the
    -- call gate. It is read as a whole number of at least 1, anything else as
    -- its default, and `taskhub-pg check` names a value out of range.
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
        'schedules keep firing. A transient failure (a timeout, a lost connection) does not count. '
        'A whole number of at least 1; any other value is read as 5, and taskhub-pg check names it.'),
       ('priority_aging_ms', '300000',
        'The head start of the highest priority (9), in milliseconds: work of priority p is '
        'ranked as if it had become due p/9 of this earlier, so work that has waited longer than '
        'this is taken ahead of any that arrives after it, whatever their priorities. Read when '
        'work is queued. A whole number from 0 to 86400000; any other value is read as 300000, '
        'and taskhub-pg check names it.');
