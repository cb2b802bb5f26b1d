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

