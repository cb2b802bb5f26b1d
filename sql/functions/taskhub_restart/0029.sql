-- Run an ended instance again: what taskhub_restart_instance (operators:
-- taskhub-pg restart, the dashboard's restart) and
-- taskhub_restart_instance_with_input (the application: Client.restart with
-- another input) do. The same orchestration and version, from the input its
-- last execution ran with (p_input: another, as JSON text), with the same
-- priority and labels, and a record of it in taskhub_restarts. Internal:
-- called by those two, which hold the call gate.
--
--   p_new_instance_id NULL: under the same id, as the instance's next
--     execution (what a continue-as-new makes, and what the released
--     runtime runs: its fetch hands over the new execution, with an empty
--     history and the start). The earlier executions stay as they were,
--     readable as the instance's history (list_executions). Messages still
--     queued for the ended instance are dropped, as a runtime drops them
--     on an ended instance's turn.
--   p_new_instance_id given: that instance is started; the old one stays
--     as it was, and the record links them.
--
-- The restarted instance runs as a root: a sub-orchestration's parent has
-- had its outcome already.
--
-- Refused in one line, with nothing written: no such instance (P0002), one
-- that has not ended (55006, object in use), a turn leased now (55P03), a new id that
-- exists (23505), bad input (22023).
--
-- A request is the instance, the ended execution (p_from_execution_id; NULL:
-- the current one) and the id it runs again under. Made again, it writes
-- nothing and returns the restart it made, with out_repeated; so does a
-- request without p_from_execution_id while the execution its restart
-- made is still running (a retried call, a second click).
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_restart(
    p_instance_id       text,
    p_new_instance_id   text,
    p_input             text,
    p_reason            text,
    p_from_execution_id bigint
)
RETURNS TABLE (
    out_instance_id       text,
    out_execution_id      bigint,
    out_from_execution_id bigint,
    out_from_status       text,
    out_repeated          boolean
)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_target     text := coalesce(p_new_instance_id, p_instance_id);
    v_name       text;
    v_version    text;
    v_ran_version text;     -- the version its OrchestrationStarted names
    v_created    timestamptz;
    v_execution  bigint;
    v_status     text;
    v_output     text;
    v_input      text;
    v_next       bigint;
    v_item       text;
    v_steering   jsonb;
    v_started    boolean;
    v_earlier    record;
    v_repeated   boolean;
    v_ended      boolean;   -- its current execution Completed or Failed
    v_now_ms     bigint := __SCHEMA__.taskhub_clock_ms(NULL);
BEGIN
    IF p_instance_id IS NULL OR p_instance_id = '' THEN
        RAISE EXCEPTION 'p_instance_id must be a non-empty text' USING ERRCODE = '22023';
    ELSIF p_new_instance_id = '' THEN
        RAISE EXCEPTION 'a new instance id must be a non-empty text (or NULL: the same id)'
            USING ERRCODE = '22023';
    ELSIF octet_length(p_new_instance_id) > __SCHEMA__.taskhub_max_id_bytes() THEN
        RAISE EXCEPTION 'the new instance id is longer than % bytes',
            __SCHEMA__.taskhub_max_id_bytes() USING ERRCODE = '22023';
    ELSIF left(p_new_instance_id, 9) = 'schedule:' OR strpos(p_new_instance_id, '::sub::') > 0 THEN
        -- A tick's instance, or a sub-orchestration's: taken first, the
        -- tick (or the parent's call) would find its id in use.
        RAISE EXCEPTION 'ids schedule:NAME:TICK and PARENT::sub::N are the scheduler''s and the '
                        'runtime''s to give: restart into another id' USING ERRCODE = '22023';
    ELSIF octet_length(p_input) > __SCHEMA__.taskhub_max_payload_bytes() THEN
        RAISE EXCEPTION 'the input is larger than % bytes', __SCHEMA__.taskhub_max_payload_bytes()
            USING ERRCODE = '22023';
    ELSIF octet_length(p_reason) > 2000 THEN
        RAISE EXCEPTION 'a reason must be at most 2000 bytes' USING ERRCODE = '22023';
    ELSIF p_input IS NOT NULL AND __SCHEMA__.taskhub_try_jsonb(p_input) IS NULL THEN
        RAISE EXCEPTION 'the input must be JSON text (as the runtime passes an input)'
            USING ERRCODE = '22023';
    END IF;

    -- The instance's own lock, which a fetch takes without waiting: no turn
    -- begins while it is restarted, and restarts of it go one at a time.
    PERFORM pg_advisory_xact_lock(__SCHEMA__.taskhub_instance_lock_key(p_instance_id));

    -- Locked: a delete or a prune of it commits first (then it is gone) or
    -- waits for this restart.
    SELECT i.orchestration_name, i.orchestration_version, i.current_execution_id, i.created_at
      INTO v_name, v_version, v_execution, v_created
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance_id
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'instance % not found (or its start not taken yet): nothing to restart',
            p_instance_id USING ERRCODE = 'P0002';
    END IF;
    SELECT e.status, e.output INTO v_status, v_output
      FROM __SCHEMA__.executions AS e
     WHERE e.instance_id = p_instance_id AND e.execution_id = v_execution;
    v_ended := coalesce(v_status IN ('Completed', 'Failed'), false);

    -- The same request again: a restart of that execution into that id, or
    -- (no execution named) the restart that made the current execution,
    -- while it runs. Only of this instance as it is: not of one deleted
    -- before its id was used again, nor into a new instance since deleted.
    SELECT r.new_instance_id, r.new_execution_id, r.from_execution_id, r.from_status
      INTO v_earlier
      FROM __SCHEMA__.taskhub_restarts AS r
     WHERE r.instance_id = p_instance_id
       AND r.new_instance_id = v_target
       AND r.from_execution_id = coalesce(p_from_execution_id, v_execution)
       AND r.restarted_at >= v_created
     ORDER BY r.id DESC
     LIMIT 1;
    v_repeated := FOUND;
    IF v_repeated AND p_new_instance_id IS NOT NULL THEN
        PERFORM 1 FROM __SCHEMA__.instances AS i WHERE i.instance_id = p_new_instance_id;
        IF NOT FOUND THEN
            PERFORM 1 FROM __SCHEMA__.orchestrator_queue AS q
             WHERE q.instance_id = p_new_instance_id;
        END IF;
        v_repeated := FOUND;
    END IF;
    IF NOT v_repeated AND p_from_execution_id IS NULL AND p_new_instance_id IS NULL
       AND NOT v_ended THEN
        SELECT r.new_instance_id, r.new_execution_id, r.from_execution_id, r.from_status
          INTO v_earlier
          FROM __SCHEMA__.taskhub_restarts AS r
         WHERE r.instance_id = p_instance_id
           AND r.new_instance_id = p_instance_id
           AND r.new_execution_id = v_execution
           AND r.restarted_at >= v_created;
        v_repeated := FOUND;
    END IF;
    IF v_repeated THEN
        out_instance_id := v_earlier.new_instance_id;
        out_execution_id := v_earlier.new_execution_id;
        out_from_execution_id := v_earlier.from_execution_id;
        out_from_status := v_earlier.from_status;
        out_repeated := true;
        RETURN NEXT;
        RETURN;
    END IF;

    IF p_from_execution_id <> v_execution THEN
        RAISE EXCEPTION 'execution % is not instance %''s latest (%): restart the latest',
            p_from_execution_id, p_instance_id, v_execution USING ERRCODE = '22023';
    ELSIF NOT v_ended THEN
        RAISE EXCEPTION 'instance % is %, not ended: cancel it first, or restart it once it has ended',
            p_instance_id, lower(coalesce(v_status, 'Running')) USING ERRCODE = '55006';
    END IF;
    PERFORM 1
      FROM __SCHEMA__.instance_locks AS il
     WHERE il.instance_id = p_instance_id
       AND il.locked_until > v_now_ms;
    IF FOUND THEN
        RAISE EXCEPTION 'a runtime holds a turn of instance % now: try again in a moment',
            p_instance_id USING ERRCODE = '55P03';
    END IF;

    -- What the ended execution ran with, from its OrchestrationStarted (the
    -- runtime writes it first, as event 1).
    SELECT coalesce(p_input, h.event_data::jsonb ->> 'input'), h.event_data::jsonb ->> 'version'
      INTO v_input, v_ran_version
      FROM __SCHEMA__.history AS h
     WHERE h.instance_id = p_instance_id
       AND h.execution_id = v_execution
       AND h.event_id = 1
       AND h.event_data::jsonb ->> 'type' = 'OrchestrationStarted';
    v_input := coalesce(v_input, p_input);
    v_version := coalesce(v_ran_version, v_version);
    IF v_input IS NULL THEN
        RAISE EXCEPTION 'the input instance % ran with is not in its history: give one',
            p_instance_id USING ERRCODE = '22023';
    END IF;
    v_next := CASE WHEN p_new_instance_id IS NULL THEN v_execution + 1 ELSE 1 END;
    -- As the duroxide client writes a start: compact, in this order.
    v_item := format('{"StartOrchestration":{"instance":%s,"orchestration":%s,"input":%s,'
                     '"version":%s,"parent_instance":null,"parent_id":null,"execution_id":%s}}',
                     to_json(v_target), to_json(v_name), to_json(v_input),
                     coalesce(to_json(v_version)::text, 'null'), v_next);
    IF octet_length(v_item) > __SCHEMA__.taskhub_max_payload_bytes() THEN
        RAISE EXCEPTION 'the start would be larger than % bytes (its input, quoted)',
            __SCHEMA__.taskhub_max_payload_bytes() USING ERRCODE = '22023';
    END IF;

    IF p_new_instance_id IS NULL THEN
        -- The next execution, current from now on; the runtime's fetch hands
        -- it over with its start and an empty history. A sub-orchestration
        -- runs as a root from now on: its parent had its outcome (and a
        -- prune of the parent would take a child with it).
        DELETE FROM __SCHEMA__.orchestrator_queue AS q
         WHERE q.instance_id = p_instance_id
           AND (q.lock_token IS NULL OR q.locked_until <= v_now_ms);
        INSERT INTO __SCHEMA__.executions (instance_id, execution_id, status, started_at)
        VALUES (p_instance_id, v_next, 'Running', clock_timestamp());
        UPDATE __SCHEMA__.instances AS i
           SET current_execution_id = v_next,
               parent_instance_id = NULL,
               updated_at = clock_timestamp()
         WHERE i.instance_id = p_instance_id;
        PERFORM __SCHEMA__.enqueue_orchestrator_work(p_instance_id, v_item, clock_timestamp());
    ELSE
        SELECT jsonb_build_object('priority', l.priority, 'labels', to_jsonb(l.labels))
          INTO v_steering
          FROM __SCHEMA__.taskhub_instance_labels AS l
         WHERE l.instance_id = p_instance_id;
        SELECT s.out_started INTO v_started
          FROM __SCHEMA__.taskhub_start_steered_orchestrations(
                   ARRAY[p_new_instance_id], ARRAY[v_item], clock_timestamp(), NULL, NULL,
                   CASE WHEN v_steering IS NOT NULL THEN jsonb_build_array(v_steering) END) AS s;
        IF NOT v_started THEN
            RAISE EXCEPTION 'instance % exists already: restart into a new id', p_new_instance_id
                USING ERRCODE = '23505';
        END IF;
    END IF;

    INSERT INTO __SCHEMA__.taskhub_restarts
           (instance_id, from_execution_id, from_status, from_output, new_instance_id,
            new_execution_id, input, restarted_at, restarted_by, reason)
    VALUES (p_instance_id, v_execution, v_status, v_output, v_target, v_next, v_input,
            clock_timestamp(), session_user, p_reason);
    out_instance_id := v_target;
    out_execution_id := v_next;
    out_from_execution_id := v_execution;
    out_from_status := v_status;
    out_repeated := false;
    RETURN NEXT;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_restart(text, text, text, text, bigint) FROM PUBLIC;
