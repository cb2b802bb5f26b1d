DECLARE
    v_now_ms    bigint;
    v_now_ts    timestamptz;
    v_instance  text;
    v_ids       bigint[];
    v_items     text[];
    v_attempts  integer;
    v_history   text;
    v_kv        jsonb;
    v_token     text;
    v_until     bigint;
BEGIN
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    v_now_ts := to_timestamp(v_now_ms / 1000.0);

    -- The oldest visible message of an instance with no live lease.
    SELECT q.instance_id INTO v_instance
      FROM __SCHEMA__.orchestrator_queue AS q
     WHERE q.visible_at <= v_now_ts
       AND (q.lock_token IS NULL OR q.locked_until <= v_now_ms)
       AND NOT EXISTS (SELECT 1
                         FROM __SCHEMA__.instance_locks AS il
                        WHERE il.instance_id = q.instance_id
                          AND il.locked_until > v_now_ms)
     ORDER BY q.visible_at, q.id
     LIMIT 1;
    IF v_instance IS NULL
       OR NOT pg_try_advisory_xact_lock(__SCHEMA__.taskhub_instance_lock_key(v_instance)) THEN
        RETURN;
    END IF;

    SELECT array_agg(m.id ORDER BY m.id), array_agg(m.work_item ORDER BY m.id),
           max(m.attempt_count)
      INTO v_ids, v_items, v_attempts
      FROM (SELECT q.id, q.work_item, q.attempt_count
              FROM __SCHEMA__.orchestrator_queue AS q
             WHERE q.instance_id = v_instance
               AND q.visible_at <= v_now_ts
               AND (q.lock_token IS NULL OR q.locked_until <= v_now_ms)
             ORDER BY q.id
               FOR UPDATE SKIP LOCKED) AS m;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;

    SELECT i.orchestration_name, coalesce(i.orchestration_version, 'unknown'),
           coalesce(i.current_execution_id, 1)
      INTO out_orchestration_name, out_orchestration_version, out_execution_id
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = v_instance;
    SELECT '[' || string_agg(h.event_data, ',' ORDER BY h.event_id) || ']'
      INTO v_history
      FROM __SCHEMA__.history AS h
     WHERE h.instance_id = v_instance
       AND h.execution_id = out_execution_id;
    SELECT coalesce(jsonb_object_agg(s.key, jsonb_build_object(
               'value', s.value, 'last_updated_at_ms', s.last_updated_at_ms)), '{}')
      INTO v_kv
      FROM __SCHEMA__.kv_store AS s
     WHERE s.instance_id = v_instance;

    -- The lease, last.
    v_token := 'lock_' || gen_random_uuid();
    v_until := __SCHEMA__.taskhub_clock_ms(p_now_ms) + p_lock_timeout_ms;
    INSERT INTO __SCHEMA__.instance_locks AS il (instance_id, lock_token, locked_until, locked_at)
    VALUES (v_instance, v_token, v_until, __SCHEMA__.taskhub_clock_ms(NULL))
    ON CONFLICT (instance_id) DO UPDATE
       SET lock_token   = EXCLUDED.lock_token,
           locked_until = EXCLUDED.locked_until,
           locked_at    = EXCLUDED.locked_at;
    UPDATE __SCHEMA__.orchestrator_queue AS q
       SET lock_token    = v_token,
           locked_until  = v_until,
           attempt_count = q.attempt_count + 1
     WHERE q.instance_id = v_instance AND q.id = ANY (v_ids);

    out_instance_id := v_instance;
    out_history := coalesce(v_history, '[]')::json;
    out_messages := ('[' || array_to_string(v_items, ',') || ']')::json;
    out_lock_token := v_token;
    out_attempt_count := v_attempts + 1;
    out_kv_snapshot := v_kv::json;
    RETURN NEXT;
END;
