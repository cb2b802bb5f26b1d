-- taskhub-pg 0001: helpers shared by the procedures.
--
-- They are internal: called from the task-hub procedures, which pin
-- search_path, so they do not pin it again (a SET clause costs every call a
-- GUC save/restore and keeps SQL helpers from being inlined).

-- The one clock of every lease decision: the database server's clock, with the
-- caller's clock as a floor. The floor keeps a lease written here consistent
-- with a caller whose clock runs slightly ahead; the server clock makes a stale
-- caller timestamp (a call that waited, a slow client) harmless. A caller clock
-- far ahead of the server is refused rather than trusted.
CREATE FUNCTION __SCHEMA__.taskhub_clock_ms(p_caller_ms bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_server_ms bigint := (extract(epoch FROM pg_catalog.clock_timestamp()) * 1000)::bigint;
BEGIN
    IF p_caller_ms > v_server_ms + 300000 THEN
        RAISE EXCEPTION 'p_now_ms (%) is more than 300 s ahead of the database clock (%)',
            p_caller_ms, v_server_ms
            USING ERRCODE = '22023';
    END IF;
    RETURN greatest(v_server_ms, coalesce(p_caller_ms, 0));
END;
$$;

-- 64-bit advisory-lock key of one instance, scoped to this schema so that two
-- task hubs in one database never contend. hashtextextended is stable across
-- PostgreSQL versions (hash partitioning depends on it).
CREATE FUNCTION __SCHEMA__.taskhub_instance_lock_key(p_instance_id text)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$
    SELECT pg_catalog.hashtextextended('taskhub:__SCHEMA_NAME__:instance:' || p_instance_id, 0)
$$;

-- Same for a worker session, so concurrent claims of one session never wait.
CREATE FUNCTION __SCHEMA__.taskhub_session_lock_key(p_session_id text)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$
    SELECT pg_catalog.hashtextextended('taskhub:__SCHEMA_NAME__:session:' || p_session_id, 0)
$$;

-- Bad input is refused before anything is written.
CREATE FUNCTION __SCHEMA__.taskhub_require(p_condition boolean, p_message text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF p_condition IS NOT TRUE THEN
        RAISE EXCEPTION '%', p_message USING ERRCODE = '22023';
    END IF;
END;
$$;

-- A JSON text as jsonb, or NULL when it is not valid JSON.
CREATE FUNCTION __SCHEMA__.taskhub_try_jsonb(p_text text)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    RETURN p_text::jsonb;
EXCEPTION WHEN invalid_text_representation THEN
    RETURN NULL;
END;
$$;

-- The variant name of an externally tagged work item ({"Variant": {...}}),
-- or NULL when the value has any other shape.
CREATE FUNCTION __SCHEMA__.taskhub_work_item_kind(p_item jsonb)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    v_keys text[];
BEGIN
    IF jsonb_typeof(p_item) IS DISTINCT FROM 'object' THEN
        RETURN NULL;
    END IF;
    -- The object's only key, read from its text form ({"Variant": {...}}):
    -- cheaper than a query over its keys, which is the fallback.
    v_keys := ARRAY[split_part(substr(p_item::text, 3), '"', 1)];
    IF jsonb_typeof(p_item -> v_keys[1]) = 'object' AND p_item - v_keys[1] = '{}'::jsonb THEN
        RETURN v_keys[1];
    END IF;
    v_keys := ARRAY(SELECT jsonb_object_keys(p_item));
    IF cardinality(v_keys) <> 1 OR jsonb_typeof(p_item -> v_keys[1]) <> 'object' THEN
        RETURN NULL;
    END IF;
    RETURN v_keys[1];
END;
$$;

-- The instance an orchestrator-queue item is addressed to: sub-orchestration
-- completions go to the parent, everything else to its own instance.
CREATE FUNCTION __SCHEMA__.taskhub_target_instance(p_item jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN p_item ? 'SubOrchCompleted' OR p_item ? 'SubOrchFailed'
                THEN pg_catalog.jsonb_path_query_first(p_item, '$.*.parent_instance')
                ELSE pg_catalog.jsonb_path_query_first(p_item, '$.*.instance')
           END #>> '{}'
$$;

-- Limits on what one call may store. Generous for real workloads; they keep a
-- runaway caller from writing rows no index or reader can handle.
CREATE FUNCTION __SCHEMA__.taskhub_max_payload_bytes()
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$ SELECT 8 * 1024 * 1024 $$;

CREATE FUNCTION __SCHEMA__.taskhub_max_id_bytes()
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$ SELECT 1024 $$;

-- How many times a message may be handed out before it goes to dead_letters.
CREATE FUNCTION __SCHEMA__.taskhub_dead_letter_cap()
RETURNS integer
LANGUAGE sql STABLE
AS $$
    SELECT coalesce((SELECT value::integer FROM __SCHEMA__.taskhub_settings
                      WHERE name = 'dead_letter_after_attempts'), 50)
$$;
