-- Whether the current execution of an instance is pinned to a duroxide
-- version outside a packed range (taskhub_version_in_range): such an instance
-- is not for a fetch with that range. An instance with no row, no current
-- execution or no pinned version is in every range.
--
-- Two one-table reads instead of a join, so that on a hub distributed by
-- Citus each is planned on its node like a plain statement (docs/scale-out.md).
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_outside_version_range(
    p_instance_id text,
    p_min         bigint,
    p_max         bigint
)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_execution bigint;
    v_outside   boolean;
BEGIN
    SELECT i.current_execution_id INTO v_execution
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance_id;
    IF v_execution IS NULL THEN
        RETURN false;
    END IF;
    SELECT NOT __SCHEMA__.taskhub_version_in_range(
               e.duroxide_version_major, e.duroxide_version_minor,
               e.duroxide_version_patch, p_min, p_max)
      INTO v_outside
      FROM __SCHEMA__.executions AS e
     WHERE e.instance_id = p_instance_id
       AND e.execution_id = v_execution;
    RETURN coalesce(v_outside, false);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_outside_version_range(text, bigint, bigint) FROM PUBLIC;
