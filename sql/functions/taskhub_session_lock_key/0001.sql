-- Same for a worker session, so concurrent claims of one session never wait.
CREATE FUNCTION __SCHEMA__.taskhub_session_lock_key(p_session_id text)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$
    SELECT pg_catalog.hashtextextended('taskhub:__SCHEMA_NAME__:session:' || p_session_id, 0)
$$;

