-- The advisory lock of one flow key: a fetch holds it (taken without
-- waiting) while it claims a slot or takes a token, a verb while it changes
-- the key's rule. One definition, so that both always mean the same lock.
CREATE FUNCTION __SCHEMA__.taskhub_flow_lock_key(p_kind text, p_name text)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT hashtextextended('taskhub:__SCHEMA__:flow:' || p_kind || ':' || p_name, 0)
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_flow_lock_key(text, text) FROM PUBLIC;
