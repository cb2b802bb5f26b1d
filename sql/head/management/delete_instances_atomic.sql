-- Delete whole instances, all or nothing: history, executions, queued
-- messages of both queues, leases, KV state, trace contexts and the instance
-- rows.
--
-- Refused (nothing deleted) when, without p_force, one of them is still
-- running; and always when an instance outside the list has its parent in
-- it (deleting would orphan that child: delete the whole tree instead).
-- The lease rows go first: a turn being acked right now is waited for, and a
-- turn acked later finds its lease gone and cannot re-create the instance.
CREATE FUNCTION __SCHEMA__.delete_instances_atomic(p_instance_ids text[], p_force boolean)
RETURNS TABLE (
    instances_deleted      bigint,
    executions_deleted     bigint,
    events_deleted         bigint,
    queue_messages_deleted bigint
)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_ids       text[] := ARRAY(SELECT DISTINCT unnest(p_instance_ids));
    v_blocker   text;
    v_instances bigint;
    v_executions bigint;
    v_events    bigint;
    v_orch      bigint;
    v_worker    bigint;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.delete_instances_atomic($1, $2)'
            USING p_instance_ids, p_force;
        RETURN;
    END IF;
    IF cardinality(v_ids) = 0 THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint, 0::bigint, 0::bigint;
        RETURN;
    END IF;

    -- Hold the instance rows: no ack can re-parent or create children meanwhile.
    PERFORM 1 FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = ANY (v_ids)
     ORDER BY i.instance_id
       FOR UPDATE;

    IF NOT coalesce(p_force, false) THEN
        SELECT i.instance_id INTO v_blocker
          FROM __SCHEMA__.instances AS i
          JOIN __SCHEMA__.executions AS e
            ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
         WHERE i.instance_id = ANY (v_ids)
           AND e.status = 'Running'
         ORDER BY i.instance_id
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'Instance % is Running. Use force=true to delete.', v_blocker
                USING ERRCODE = '55000';
        END IF;
    END IF;

    SELECT i.instance_id INTO v_blocker
      FROM __SCHEMA__.instances AS i
     WHERE i.parent_instance_id = ANY (v_ids)
       AND NOT i.instance_id = ANY (v_ids)
     ORDER BY i.instance_id
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'Orphan detected: instance % has parent in delete list but is not included',
            v_blocker
            USING ERRCODE = '55000',
                  HINT = 'Delete the whole instance tree (root and all descendants) together.';
    END IF;

    DELETE FROM __SCHEMA__.instance_locks AS il WHERE il.instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.history AS h WHERE h.instance_id = ANY (v_ids);
    GET DIAGNOSTICS v_events = ROW_COUNT;
    DELETE FROM __SCHEMA__.executions AS e WHERE e.instance_id = ANY (v_ids);
    GET DIAGNOSTICS v_executions = ROW_COUNT;
    DELETE FROM __SCHEMA__.orchestrator_queue AS q WHERE q.instance_id = ANY (v_ids);
    GET DIAGNOSTICS v_orch = ROW_COUNT;
    DELETE FROM __SCHEMA__.worker_queue AS q WHERE q.instance_id = ANY (v_ids);
    GET DIAGNOSTICS v_worker = ROW_COUNT;
    DELETE FROM __SCHEMA__.kv_delta AS d WHERE d.instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.kv_store AS s WHERE s.instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.taskhub_trace_contexts AS t WHERE t.instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.taskhub_instance_labels AS l WHERE l.instance_id = ANY (v_ids);
    -- Their restarts, by either id: the ended run's output and input go too.
    DELETE FROM __SCHEMA__.taskhub_restarts AS r WHERE r.instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.taskhub_restarts AS r WHERE r.new_instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.instances AS i WHERE i.instance_id = ANY (v_ids);
    GET DIAGNOSTICS v_instances = ROW_COUNT;

    RETURN QUERY SELECT v_instances, v_executions, v_events, v_orch + v_worker;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.delete_instances_atomic(text[], boolean) FROM PUBLIC;
