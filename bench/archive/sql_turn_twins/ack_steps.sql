DECLARE
    v_now_ms   bigint;
    v_now_ts   timestamptz;
    v_instance text;
BEGIN
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    SELECT il.instance_id INTO v_instance
      FROM __SCHEMA__.instance_locks AS il
     WHERE il.lock_token = p_lock_token
       AND il.locked_until > v_now_ms
       FOR UPDATE;
    IF v_instance IS NULL THEN
        PERFORM __SCHEMA__.twin_lease_lost(p_lock_token);
    END IF;
    v_now_ts := to_timestamp(v_now_ms / 1000.0);

    UPDATE __SCHEMA__.instances AS i
       SET current_execution_id = greatest(i.current_execution_id, p_execution_id),
           updated_at           = v_now_ts
     WHERE i.instance_id = v_instance;
    PERFORM 1
      FROM __SCHEMA__.executions AS x
     WHERE x.instance_id = v_instance AND x.execution_id = p_execution_id;
    IF NOT FOUND THEN
        INSERT INTO __SCHEMA__.executions (instance_id, execution_id, status, started_at)
        VALUES (v_instance, p_execution_id, 'Running', v_now_ts)
        ON CONFLICT (instance_id, execution_id) DO NOTHING;
    END IF;

    INSERT INTO __SCHEMA__.history
           (instance_id, execution_id, event_id, event_type, event_data, created_at)
    SELECT v_instance, p_execution_id, (e ->> 'event_id')::bigint,
           coalesce(e ->> 'event_type', 'Event'), e ->> 'event_data', v_now_ts
      FROM jsonb_array_elements(p_history_delta) AS e;
    INSERT INTO __SCHEMA__.orchestrator_queue (instance_id, work_item, visible_at, created_at)
    SELECT coalesce(__SCHEMA__.taskhub_target_instance(o), v_instance), o::text, v_now_ts, v_now_ts
      FROM jsonb_array_elements(p_orchestrator_items) WITH ORDINALITY AS item (o, pos)
     ORDER BY pos;

    DELETE FROM __SCHEMA__.orchestrator_queue AS q
     WHERE q.instance_id = v_instance AND q.lock_token = p_lock_token;
    DELETE FROM __SCHEMA__.instance_locks AS il
     WHERE il.instance_id = v_instance AND il.lock_token = p_lock_token;
END;
