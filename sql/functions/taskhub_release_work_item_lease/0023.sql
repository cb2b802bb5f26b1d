-- Release an activity's lease whose worker is known to be gone, without
-- waiting for it to expire: the item is visible again at once (this
-- delivery counts towards the dead-letter threshold, as any give-back), and
-- the holder's late ack is refused. No delay can be asked for: an operator
-- gives the item back, and cannot hold it back (abandon_work_item, which the
-- runtime calls, can). Returns whether a lease was released: false when the
-- token holds none (acked, released, or expired and taken by another worker).
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_release_work_item_lease(p_lock_token text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_released boolean;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        EXECUTE 'SELECT __SCHEMA__.taskhub_release_work_item_lease($1)'
           INTO v_released
          USING p_lock_token;
        RETURN v_released;
    END IF;
    IF p_lock_token IS NULL OR p_lock_token = '' THEN
        RAISE EXCEPTION 'p_lock_token must be a non-empty text' USING ERRCODE = '22023';
    END IF;
    BEGIN
        PERFORM __SCHEMA__.abandon_work_item(p_lock_token, NULL, 0, false);
    EXCEPTION WHEN SQLSTATE 'TH001' THEN
        RETURN false;
    END;
    RETURN true;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_release_work_item_lease(text) FROM PUBLIC;
