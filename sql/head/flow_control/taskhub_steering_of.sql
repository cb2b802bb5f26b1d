-- The steering that work queued now for an instance carries
-- (docs/flow-control.md): the priority and labels it was started with
-- (taskhub_instance_labels; NULLs for none, so that such work is queued with
-- no extra write), and the rank of work due at p_visible_at. For the
-- functions that queue work from outside the instance's turns (the turns
-- carry theirs on the lease). A statement of its own in its callers.
CREATE FUNCTION __SCHEMA__.taskhub_steering_of(p_instance_id text, p_visible_at timestamptz)
RETURNS TABLE (out_priority smallint, out_labels text[], out_rank timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    SELECT nullif(l.priority, 0), nullif(l.labels, '{}') INTO out_priority, out_labels
      FROM __SCHEMA__.taskhub_instance_labels AS l
     WHERE l.instance_id = p_instance_id;
    IF out_priority > 0 THEN
        out_rank := __SCHEMA__.taskhub_rank_of(p_visible_at, out_priority,
                                               __SCHEMA__.taskhub_priority_aging_ms());
    END IF;
    RETURN NEXT;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_steering_of(text, timestamp with time zone) FROM PUBLIC;
