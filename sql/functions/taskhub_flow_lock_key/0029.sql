-- The advisory lock a fetch holds while it counts a limited key's slots and
-- takes one, so that two fetches never both take the last slot.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_flow_lock_key(p_kind text, p_name text)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT hashtextextended('taskhub:__SCHEMA__:flow:' || p_kind || ':' || p_name, 0)
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_flow_lock_key(text, text) FROM PUBLIC;
