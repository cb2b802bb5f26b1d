-- 64-bit advisory-lock key of one worker session, scoped to this schema like
-- taskhub_instance_lock_key: fetch_work_item tries it, so concurrent claims of
-- one session never wait on each other.
CREATE FUNCTION __SCHEMA__.taskhub_session_lock_key(p_session_id text)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$
    SELECT pg_catalog.hashtextextended('taskhub:__SCHEMA_NAME__:session:' || p_session_id, 0)
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_session_lock_key(text) FROM PUBLIC;
