-- The DETAIL of every 'lease lost' error (SQLSTATE TH001), so that each
-- procedure tells why in the same words. p_seen_until is the lease end still
-- stored for the token: NULL when no row holds the token any more, and a
-- lease end still ahead means the row changed hands while we waited.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_lease_lost_detail(p_seen_until bigint, p_now_ms bigint)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE
               WHEN p_seen_until IS NULL OR p_seen_until > p_now_ms
               THEN 'No live lease holds this token: it was acked, released or abandoned,'
                    ' or taken over after it expired.'
               ELSE format('The lease expired %s ms ago.', p_now_ms - p_seen_until)
           END
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_lease_lost_detail(bigint, bigint) FROM PUBLIC;
