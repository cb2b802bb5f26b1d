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

-- The transient conditions, one place: what a PostgreSQL server (or the
-- runtime's connection pool) says when a call failed for a passing reason.
-- `pattern` is a case-insensitive regular expression over the failure
-- message the runtime recorded; the first match names the condition, so the
-- generic connection failure comes last. Tested against real servers' messages in
-- tests/test_transient_failures.py.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_transient_conditions()
RETURNS TABLE (condition text, sqlstates text, pattern text)
LANGUAGE sql IMMUTABLE
AS $$
    VALUES
        ('admin_shutdown', '57P01',
         'terminating connection due to administrator command'),
        ('crash_shutdown', '57P02',
         'terminating connection because of crash of another server process'
         '|terminating connection due to unexpected postmaster exit'),
        ('cannot_connect_now', '57P03',
         'the database system is (starting up|shutting down|in recovery mode'
         '|not yet accepting connections|not accepting connections)'),
        ('idle_timeout', '25P03 57P05',
         'terminating connection due to idle(-in-transaction|-session) timeout'),
        ('serialization_failure', '40001',
         'could not serialize access|canceling statement due to conflict with recovery'),
        ('deadlock', '40P01',
         'deadlock detected'),
        ('lock_timeout', '55P03',
         'canceling statement due to lock timeout|could not obtain lock on'),
        ('statement_timeout', '57014',
         'canceling statement due to (statement timeout|user request)'),
        ('disk_full', '53100',
         'no space left on device|disk quota exceeded'),
        ('out_of_memory', '53200',
         'out of memory'),
        ('too_many_connections', '53300',
         'sorry, too many clients already|remaining connection slots are reserved'
         '|too many connections for'),
        ('read_only_transaction', '25006',
         'cannot execute [a-z ]+ in a read-only transaction'),
        ('connection_failure', '08000 08001 08003 08006',
         'server closed the connection unexpectedly|connection refused|connection reset'
         '|broken pipe|could not connect to server|connection to server .* failed'
         '|no connection to the server|error communicating with database'
         '|unexpected (eof|end of file)|pool timed out|attempted to acquire a connection on a closed pool')
$$;

-- The transient condition a failure message names, or NULL.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_transient_condition(p_message text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT c.condition
      FROM __SCHEMA__.taskhub_transient_conditions() AS c
     WHERE p_message ~* c.pattern
     LIMIT 1
$$;

-- The provider operations whose failures the runtime records: the methods of
-- its Provider trait. A failure of anything else (the runtime's own checks)
-- is never shielded.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_provider_operations()
RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
    SELECT ARRAY[
        'fetch_orchestration_item', 'ack_orchestration_item', 'abandon_orchestration_item',
        'renew_orchestration_item_lock', 'fetch_work_item', 'ack_work_item',
        'abandon_work_item', 'renew_work_item_lock', 'renew_session_lock',
        'cleanup_orphaned_sessions', 'enqueue_for_orchestrator', 'enqueue_for_worker',
        'enqueue_orchestrator_work', 'enqueue_worker_work', 'read', 'read_with_execution',
        'append_with_execution', 'get_custom_status', 'get_kv_value', 'get_kv_all_values']
$$;

-- If the turn p_history records the provider's own transient failure (an
-- OrchestrationFailed event with Infrastructure details, a provider
-- operation and a message naming a transient condition), that failure.
-- Application, poison and configuration failures, and other infrastructure
-- failures, give no row. Called by ack_orchestration_item for failed turns only.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_transient_failure_of(p_history jsonb)
RETURNS TABLE (operation text, message text, condition text)
LANGUAGE sql IMMUTABLE
AS $$
    SELECT failure.operation, failure.message, classified.condition
      FROM jsonb_array_elements(p_history) AS e,
           LATERAL (SELECT __SCHEMA__.taskhub_try_jsonb(e ->> 'event_data') AS data) AS event,
           LATERAL (SELECT event.data -> 'details' -> 'Infrastructure' ->> 'operation' AS operation,
                           event.data -> 'details' -> 'Infrastructure' ->> 'message' AS message)
                   AS failure,
           LATERAL (SELECT __SCHEMA__.taskhub_transient_condition(failure.message) AS condition)
                   AS classified
     WHERE event.data ->> 'type' = 'OrchestrationFailed'
       AND failure.operation = ANY (__SCHEMA__.taskhub_provider_operations())
       AND classified.condition IS NOT NULL
     LIMIT 1
$$;

-- How long a given-back turn's messages wait before the next delivery:
-- 100 ms, doubling with each delivery, at most 5 s. A fault that lasts is
-- then not retried in a tight loop, and the runtime's poison check (after
-- max_attempts deliveries, about 20 s of such failures) and dead_letters
-- still end a turn that keeps failing.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_transient_retry_delay_ms(p_attempt integer)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$
    SELECT least(5000, 100 * power(2, least(greatest(coalesce(p_attempt, 1), 1) - 1, 16)))::bigint
$$;
