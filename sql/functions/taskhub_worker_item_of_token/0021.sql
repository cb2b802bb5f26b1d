-- The worker item a lease token names: fetch_work_item writes the item's id
-- into the tokens it hands out ('lock_<id>_<uuid>', revision 0021), so that
-- ack, renew and abandon find the item by its primary key, and no index
-- holds lock_token: the fetch's lease tag is then a HOT update. NULL for a
-- token of another form (handed out before 0021): the caller looks that one
-- up by token, reading the queue.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_worker_item_of_token(p_lock_token text)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_lock_token ~ '^lock_[0-9]{1,18}_'
                THEN split_part(p_lock_token, '_', 2)::bigint END
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_worker_item_of_token(text) FROM PUBLIC;
