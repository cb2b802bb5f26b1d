-- The refusal of an ack whose lease is gone or expired (as the shipped ack's).
CREATE FUNCTION __SCHEMA__.twin_lease_lost(p_lock_token text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'Invalid lock token' USING ERRCODE = 'TH001';
END;
$$;
