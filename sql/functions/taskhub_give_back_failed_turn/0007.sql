-- Give back a turn whose ack records a transient failure instead of its
-- work: its messages wait taskhub_transient_retry_delay_ms (they keep the
-- delivery counted by the fetch), the lease ends, and the failure is logged
-- in shielded_failures and the server log. The next fetch replays the turn
-- from the unchanged history. (Internal helper of ack_orchestration_item,
-- which holds the lease's row lock.)
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_give_back_failed_turn(
    p_lock_token   text,
    p_instance     text,
    p_execution_id bigint,
    p_operation    text,
    p_condition    text,
    p_message      text,
    p_now_ms       bigint
)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_attempt integer;
    v_delay   bigint;
BEGIN
    SELECT coalesce(max(q.attempt_count), 1) INTO v_attempt
      FROM __SCHEMA__.orchestrator_queue AS q
     WHERE q.lock_token = p_lock_token;
    v_delay := __SCHEMA__.taskhub_transient_retry_delay_ms(v_attempt);

    -- What an abandon does: the lease ends, the messages wait v_delay and
    -- keep the delivery the fetch counted.
    PERFORM __SCHEMA__.abandon_orchestration_item(p_lock_token, p_now_ms, v_delay, false);

    INSERT INTO __SCHEMA__.shielded_failures
           (instance_id, execution_id, operation, condition, message, attempt_count, retry_after_ms)
    VALUES (p_instance, p_execution_id, p_operation, p_condition, p_message, v_attempt, v_delay);
    RAISE LOG 'taskhub: % of instance % (execution %, attempt %) failed with a transient '
              'database error (%); the turn was given back for redelivery in % ms instead of '
              'failing the orchestration: %',
              p_operation, p_instance, p_execution_id, v_attempt, p_condition, v_delay, p_message;
END;
$$;
