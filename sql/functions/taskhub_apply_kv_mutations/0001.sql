-- Apply the key-value changes of one orchestration turn (called by
-- ack_orchestration_item inside its transaction).
--
-- Changes of the running execution accumulate in kv_delta (NULL value = key
-- removed). When the execution ends (Completed, Failed, ContinuedAsNew) the
-- delta is folded into kv_store and emptied. Fetches snapshot kv_store only:
-- the runtime rebuilds the current execution's changes from its history.
CREATE FUNCTION __SCHEMA__.taskhub_apply_kv_mutations(
    p_instance_id  text,
    p_execution_id bigint,
    p_mutations    jsonb,
    p_terminal     boolean,
    p_now_ms       bigint
)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    v_change jsonb;
BEGIN
    IF jsonb_typeof(p_mutations) = 'array' THEN
        FOR v_change IN SELECT m FROM jsonb_array_elements(p_mutations) AS m LOOP
            CASE v_change ->> 'action'
            WHEN 'set' THEN
                PERFORM __SCHEMA__.taskhub_require(v_change ->> 'key' IS NOT NULL
                                                   AND v_change ->> 'value' IS NOT NULL,
                    'a KV set needs a key and a value');
                INSERT INTO __SCHEMA__.kv_delta AS d (instance_id, key, value, last_updated_at_ms)
                VALUES (p_instance_id, v_change ->> 'key', v_change ->> 'value',
                        coalesce((v_change ->> 'last_updated_at_ms')::bigint, p_now_ms))
                ON CONFLICT (instance_id, key) DO UPDATE
                   SET value = EXCLUDED.value,
                       last_updated_at_ms = EXCLUDED.last_updated_at_ms;
            WHEN 'clear_key' THEN
                PERFORM __SCHEMA__.taskhub_require(v_change ->> 'key' IS NOT NULL,
                    'a KV clear_key needs a key');
                INSERT INTO __SCHEMA__.kv_delta AS d (instance_id, key, value, last_updated_at_ms)
                VALUES (p_instance_id, v_change ->> 'key', NULL, p_now_ms)
                ON CONFLICT (instance_id, key) DO UPDATE
                   SET value = NULL,
                       last_updated_at_ms = EXCLUDED.last_updated_at_ms;
            WHEN 'clear_all' THEN
                UPDATE __SCHEMA__.kv_delta AS d
                   SET value = NULL, last_updated_at_ms = p_now_ms
                 WHERE d.instance_id = p_instance_id;
                INSERT INTO __SCHEMA__.kv_delta (instance_id, key, value, last_updated_at_ms)
                SELECT s.instance_id, s.key, NULL, p_now_ms
                  FROM __SCHEMA__.kv_store AS s
                 WHERE s.instance_id = p_instance_id
                ON CONFLICT (instance_id, key) DO NOTHING;
            ELSE
                RAISE EXCEPTION 'unknown KV mutation action: %', v_change ->> 'action'
                    USING ERRCODE = '22023';
            END CASE;
        END LOOP;
    END IF;

    IF p_terminal THEN
        INSERT INTO __SCHEMA__.kv_store AS s
               (instance_id, key, value, execution_id, last_updated_at_ms)
        SELECT d.instance_id, d.key, d.value, p_execution_id, d.last_updated_at_ms
          FROM __SCHEMA__.kv_delta AS d
         WHERE d.instance_id = p_instance_id
           AND d.value IS NOT NULL
        ON CONFLICT (instance_id, key) DO UPDATE
           SET value = EXCLUDED.value,
               execution_id = EXCLUDED.execution_id,
               last_updated_at_ms = EXCLUDED.last_updated_at_ms;
        DELETE FROM __SCHEMA__.kv_store AS s
         USING __SCHEMA__.kv_delta AS d
         WHERE d.instance_id = p_instance_id
           AND d.value IS NULL
           AND s.instance_id = d.instance_id
           AND s.key = d.key;
        DELETE FROM __SCHEMA__.kv_delta AS d WHERE d.instance_id = p_instance_id;
    END IF;
END;
$$;
