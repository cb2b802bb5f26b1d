-- Size figures of one instance's current execution and KV state.
CREATE FUNCTION __SCHEMA__.get_instance_stats(p_instance text)
RETURNS TABLE (
    out_found                boolean,
    out_history_event_count  bigint,
    out_history_size_bytes   bigint,
    out_queue_pending_count  bigint,
    out_kv_user_key_count    bigint,
    out_kv_total_value_bytes bigint
)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_execution bigint;
    v_events    bigint;
    v_bytes     bigint;
    v_pending   bigint;
    v_keys      bigint;
    v_kv_bytes  bigint;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.get_instance_stats($1)' USING p_instance;
        RETURN;
    END IF;
    SELECT i.current_execution_id INTO v_execution
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint;
        RETURN;
    END IF;

    SELECT count(*), coalesce(sum(octet_length(h.event_data::text)), 0)
      INTO v_events, v_bytes
      FROM __SCHEMA__.history AS h
     WHERE h.instance_id = p_instance AND h.execution_id = v_execution;

    -- Events carried into this execution by continue-as-new, still to be consumed.
    SELECT coalesce(jsonb_array_length(
               CASE WHEN jsonb_typeof(ev -> 'carry_forward_events') = 'array'
                    THEN ev -> 'carry_forward_events' END), 0)
      INTO v_pending
      FROM __SCHEMA__.history AS h,
           LATERAL (SELECT __SCHEMA__.taskhub_try_jsonb(h.event_data::text) AS ev) AS parsed
     WHERE h.instance_id = p_instance AND h.execution_id = v_execution AND h.event_id = 1;

    SELECT count(*) INTO v_keys FROM __SCHEMA__.get_kv_all_values(p_instance);
    SELECT coalesce((SELECT sum(octet_length(s.value)) FROM __SCHEMA__.kv_store AS s
                      WHERE s.instance_id = p_instance), 0)
         + coalesce((SELECT sum(octet_length(d.value)) FROM __SCHEMA__.kv_delta AS d
                      WHERE d.instance_id = p_instance), 0)
      INTO v_kv_bytes;

    RETURN QUERY SELECT true, v_events, v_bytes, coalesce(v_pending, 0), v_keys, v_kv_bytes;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.get_instance_stats(text) FROM PUBLIC;
