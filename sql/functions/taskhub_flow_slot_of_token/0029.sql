-- The slot of a concurrency limit a worker item's lock token holds
-- ('lock_<id>_flow<slot>_<uuid>', fetch_work_item), NULL for any other token.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_flow_slot_of_token(p_lock_token text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT substring(p_lock_token FROM '^lock_[0-9]{1,18}_flow([0-9]{1,5})_')::integer
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_flow_slot_of_token(text) FROM PUBLIC;
