-- Reads of custom status and key-value state.

-- The custom status, only when its version is newer than p_last_seen_version
-- (so a client can poll for changes). No row otherwise.
CREATE FUNCTION __SCHEMA__.get_custom_status(p_instance_id text, p_last_seen_version bigint)
RETURNS TABLE (out_custom_status text, out_custom_status_version bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT i.custom_status, i.custom_status_version::bigint
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance_id
       AND i.custom_status_version > coalesce(p_last_seen_version, 0);
END;
$$;

-- The live value of one key: the current execution's change wins over the
-- committed value; a removed key is not found. Always exactly one row.
CREATE FUNCTION __SCHEMA__.get_kv_value(p_instance text, p_key text)
RETURNS TABLE (out_value text, out_found boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT CASE WHEN d.instance_id IS NOT NULL THEN d.value ELSE s.value END,
           CASE WHEN d.instance_id IS NOT NULL THEN d.value IS NOT NULL
                ELSE s.instance_id IS NOT NULL END
      FROM (SELECT 1) AS one
      LEFT JOIN __SCHEMA__.kv_delta AS d ON d.instance_id = p_instance AND d.key = p_key
      LEFT JOIN __SCHEMA__.kv_store AS s ON s.instance_id = p_instance AND s.key = p_key;
END;
$$;

-- All live keys of an instance (committed values overlaid by the current
-- execution's changes, removed keys left out).
CREATE FUNCTION __SCHEMA__.get_kv_all_values(p_instance text)
RETURNS TABLE (out_key text, out_value text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT coalesce(d.key, s.key), CASE WHEN d.key IS NOT NULL THEN d.value ELSE s.value END
      FROM (SELECT * FROM __SCHEMA__.kv_store WHERE instance_id = p_instance) AS s
      FULL JOIN (SELECT * FROM __SCHEMA__.kv_delta WHERE instance_id = p_instance) AS d
        ON d.key = s.key
     WHERE CASE WHEN d.key IS NOT NULL THEN d.value IS NOT NULL ELSE true END
     ORDER BY 1;
END;
$$;

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
    SELECT i.current_execution_id INTO v_execution
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint;
        RETURN;
    END IF;

    SELECT count(*), coalesce(sum(octet_length(h.event_data)), 0)
      INTO v_events, v_bytes
      FROM __SCHEMA__.history AS h
     WHERE h.instance_id = p_instance AND h.execution_id = v_execution;

    -- Events carried into this execution by continue-as-new, still to be consumed.
    SELECT coalesce(jsonb_array_length(
               CASE WHEN jsonb_typeof(ev -> 'carry_forward_events') = 'array'
                    THEN ev -> 'carry_forward_events' END), 0)
      INTO v_pending
      FROM __SCHEMA__.history AS h,
           LATERAL (SELECT __SCHEMA__.taskhub_try_jsonb(h.event_data) AS ev) AS parsed
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
