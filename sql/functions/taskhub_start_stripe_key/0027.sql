-- 64-bit advisory-lock key of the stripe of starts an instance id falls in
-- (one of 1024, scoped to this schema). A start of one instance holds its
-- stripe shared; a start of many holds each of their stripes exclusively, so
-- that a batch of any size takes at most 1024 locks (a lock per instance
-- would fill the server's lock table) and still serializes with every
-- single start of the same ids.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_start_stripe_key(p_instance_id text)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$
    SELECT pg_catalog.hashtextextended(
               'taskhub:__SCHEMA_NAME__:start-stripe:'
               || (pg_catalog.hashtextextended(p_instance_id, 0) & 1023)::text, 0)
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_start_stripe_key(text) FROM PUBLIC;
