-- Delete old executions of one instance (their history included).
--
-- The current execution and any Running execution are never deleted. With
-- p_keep_last, the newest N executions (the current one counted) are kept;
-- with p_completed_before_ms, only executions completed before that moment
-- are deleted. KV state belongs to the instance and is never touched.
CREATE FUNCTION __SCHEMA__.prune_executions(
    p_instance_id         text,
    p_keep_last           integer DEFAULT NULL,
    p_completed_before_ms bigint  DEFAULT NULL
)
RETURNS TABLE (instances_processed bigint, executions_deleted bigint, events_deleted bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_current    bigint;
    v_doomed     bigint[];
    v_executions bigint;
    v_events     bigint;
BEGIN
    PERFORM __SCHEMA__.taskhub_require(p_keep_last IS NULL OR p_keep_last >= 0,
        'p_keep_last must not be negative');

    SELECT i.current_execution_id INTO v_current
      FROM __SCHEMA__.instances AS i
     WHERE i.instance_id = p_instance_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'Instance % not found', p_instance_id USING ERRCODE = 'P0002';
    END IF;

    v_doomed := ARRAY(
        SELECT e.execution_id
          FROM __SCHEMA__.executions AS e
         WHERE e.instance_id = p_instance_id
           AND e.execution_id <> v_current
           AND e.status <> 'Running'
           AND (p_completed_before_ms IS NULL
                OR e.completed_at < to_timestamp(p_completed_before_ms / 1000.0))
           AND (p_keep_last IS NULL
                OR e.execution_id NOT IN (SELECT newest.execution_id
                                            FROM __SCHEMA__.executions AS newest
                                           WHERE newest.instance_id = p_instance_id
                                           ORDER BY newest.execution_id DESC
                                           LIMIT p_keep_last)));

    DELETE FROM __SCHEMA__.history AS h
     WHERE h.instance_id = p_instance_id AND h.execution_id = ANY (v_doomed);
    GET DIAGNOSTICS v_events = ROW_COUNT;
    DELETE FROM __SCHEMA__.executions AS e
     WHERE e.instance_id = p_instance_id AND e.execution_id = ANY (v_doomed);
    GET DIAGNOSTICS v_executions = ROW_COUNT;

    RETURN QUERY SELECT 1::bigint, v_executions, v_events;
END;
$$;
