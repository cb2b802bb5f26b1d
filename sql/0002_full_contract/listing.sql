-- Read-only management queries.

-- All instance ids, newest first.
CREATE FUNCTION __SCHEMA__.list_instances()
RETURNS TABLE (instance_id text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT i.instance_id FROM __SCHEMA__.instances AS i ORDER BY i.created_at DESC, i.instance_id;
END;
$$;

-- Instances whose current execution has this status, newest first.
CREATE FUNCTION __SCHEMA__.list_instances_by_status(p_status text)
RETURNS TABLE (instance_id text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT i.instance_id
      FROM __SCHEMA__.instances AS i
      JOIN __SCHEMA__.executions AS e
        ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
     WHERE e.status = p_status
     ORDER BY i.created_at DESC, i.instance_id;
END;
$$;

-- Execution ids of an instance, oldest first.
CREATE FUNCTION __SCHEMA__.list_executions(p_instance_id text)
RETURNS TABLE (execution_id bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT e.execution_id FROM __SCHEMA__.executions AS e
     WHERE e.instance_id = p_instance_id
     ORDER BY e.execution_id;
END;
$$;

-- The current execution id; 'Instance not found: <id>' when there is none.
CREATE FUNCTION __SCHEMA__.latest_execution_id(p_instance_id text)
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_execution bigint;
BEGIN
    SELECT coalesce(
               (SELECT i.current_execution_id FROM __SCHEMA__.instances AS i
                 WHERE i.instance_id = p_instance_id),
               (SELECT max(e.execution_id) FROM __SCHEMA__.executions AS e
                 WHERE e.instance_id = p_instance_id))
      INTO v_execution;
    IF v_execution IS NULL THEN
        RAISE EXCEPTION 'Instance not found: %', p_instance_id USING ERRCODE = 'P0002';
    END IF;
    RETURN v_execution;
END;
$$;

-- An instance with the status and output of its current execution.
CREATE FUNCTION __SCHEMA__.get_instance_info(p_instance_id text)
RETURNS TABLE (
    instance_id           text,
    orchestration_name    text,
    orchestration_version text,
    current_execution_id  bigint,
    created_at            timestamptz,
    updated_at            timestamptz,
    status                text,
    output                text,
    parent_instance_id    text
)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT i.instance_id, i.orchestration_name, coalesce(i.orchestration_version, 'unknown'),
           i.current_execution_id, i.created_at, i.updated_at, e.status, e.output,
           i.parent_instance_id
      FROM __SCHEMA__.instances AS i
      LEFT JOIN __SCHEMA__.executions AS e
        ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
     WHERE i.instance_id = p_instance_id;
END;
$$;

-- One execution with its number of history events.
CREATE FUNCTION __SCHEMA__.get_execution_info(p_instance_id text, p_execution_id bigint)
RETURNS TABLE (
    execution_id bigint,
    status       text,
    output       text,
    started_at   timestamptz,
    completed_at timestamptz,
    event_count  bigint
)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT e.execution_id, e.status, e.output, e.started_at, e.completed_at,
           (SELECT count(*) FROM __SCHEMA__.history AS h
             WHERE h.instance_id = e.instance_id AND h.execution_id = e.execution_id)
      FROM __SCHEMA__.executions AS e
     WHERE e.instance_id = p_instance_id
       AND e.execution_id = p_execution_id;
END;
$$;

-- Totals over the whole hub; statuses are those of current executions.
CREATE FUNCTION __SCHEMA__.get_system_metrics()
RETURNS TABLE (
    total_instances     bigint,
    total_executions    bigint,
    running_instances   bigint,
    completed_instances bigint,
    failed_instances    bigint,
    total_events        bigint
)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT (SELECT count(*) FROM __SCHEMA__.instances),
           (SELECT count(*) FROM __SCHEMA__.executions),
           count(*) FILTER (WHERE e.status = 'Running'),
           count(*) FILTER (WHERE e.status = 'Completed'),
           count(*) FILTER (WHERE e.status = 'Failed'),
           (SELECT count(*) FROM __SCHEMA__.history)
      FROM __SCHEMA__.instances AS i
      JOIN __SCHEMA__.executions AS e
        ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id;
END;
$$;

-- Messages ready to be fetched now: visible and not held by a live lease.
CREATE FUNCTION __SCHEMA__.get_queue_depths(p_now_ms bigint)
RETURNS TABLE (orchestrator_queue bigint, worker_queue bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now_ms bigint := __SCHEMA__.taskhub_clock_ms(p_now_ms);
BEGIN
    RETURN QUERY
    SELECT (SELECT count(*) FROM __SCHEMA__.orchestrator_queue AS q
             WHERE q.visible_at <= to_timestamp(v_now_ms / 1000.0)
               AND (q.lock_token IS NULL OR q.locked_until <= v_now_ms)),
           (SELECT count(*) FROM __SCHEMA__.worker_queue AS q
             WHERE q.visible_at <= to_timestamp(v_now_ms / 1000.0)
               AND (q.lock_token IS NULL OR q.locked_until <= v_now_ms));
END;
$$;

-- Direct children (sub-orchestrations) of an instance, oldest first.
CREATE FUNCTION __SCHEMA__.list_children(p_instance_id text)
RETURNS TABLE (child_instance_id text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT i.instance_id FROM __SCHEMA__.instances AS i
     WHERE i.parent_instance_id = p_instance_id
     ORDER BY i.created_at, i.instance_id;
END;
$$;

-- The parent of an instance (NULL for a root); 'Instance not found: <id>' if unknown.
CREATE FUNCTION __SCHEMA__.get_parent_id(p_instance_id text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_parent text;
BEGIN
    SELECT i.parent_instance_id INTO v_parent
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Instance not found: %', p_instance_id USING ERRCODE = 'P0002';
    END IF;
    RETURN v_parent;
END;
$$;
