-- 64-bit advisory-lock key of one instance, scoped to this schema so that two
-- task hubs in one database never contend. hashtextextended is stable across
-- PostgreSQL versions (hash partitioning depends on it).
CREATE FUNCTION __SCHEMA__.taskhub_instance_lock_key(p_instance_id text)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$
    SELECT pg_catalog.hashtextextended('taskhub:__SCHEMA_NAME__:instance:' || p_instance_id, 0)
$$;

