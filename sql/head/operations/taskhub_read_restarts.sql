-- The restarts an instance took part in, as the one restarted or the one
-- it was restarted into, oldest first (taskhub_restarts): for `inspect
-- instance`, Client.restarts and the dashboard's instance page.
CREATE FUNCTION __SCHEMA__.taskhub_read_restarts(p_instance_id text)
RETURNS TABLE (
    id                bigint,
    instance_id       text,
    from_execution_id bigint,
    from_status       text,
    from_output       text,
    new_instance_id   text,
    new_execution_id  bigint,
    input             text,
    restarted_at      timestamptz,
    restarted_by      text,
    reason            text
)
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.id, r.instance_id, r.from_execution_id, r.from_status, r.from_output,
           r.new_instance_id, r.new_execution_id, r.input, r.restarted_at, r.restarted_by,
           r.reason
      FROM __SCHEMA__.taskhub_restarts AS r
     WHERE r.instance_id = p_instance_id
    UNION
    SELECT r.id, r.instance_id, r.from_execution_id, r.from_status, r.from_output,
           r.new_instance_id, r.new_execution_id, r.input, r.restarted_at, r.restarted_by,
           r.reason
      FROM __SCHEMA__.taskhub_restarts AS r
     WHERE r.new_instance_id = p_instance_id
     ORDER BY 1
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_read_restarts(text) FROM PUBLIC;
