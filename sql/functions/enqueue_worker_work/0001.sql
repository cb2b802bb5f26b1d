-- Put one activity execution on the worker queue, visible at once.
-- The identity columns (instance, execution, activity id) let a later turn
-- cancel it; session_id and tag route it to the right workers.
CREATE FUNCTION __SCHEMA__.enqueue_worker_work(
    p_work_item    text,
    p_now_ms       bigint,
    p_instance_id  text   DEFAULT NULL,
    p_execution_id bigint DEFAULT NULL,
    p_activity_id  bigint DEFAULT NULL,
    p_session_id   text   DEFAULT NULL,
    p_tag          text   DEFAULT NULL
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now_ts timestamptz := to_timestamp(__SCHEMA__.taskhub_clock_ms(NULL) / 1000.0);
BEGIN
    IF octet_length(p_work_item) > __SCHEMA__.taskhub_max_payload_bytes() THEN
        RAISE EXCEPTION 'p_work_item is larger than % bytes', __SCHEMA__.taskhub_max_payload_bytes()
            USING ERRCODE = '54000';
    ELSIF octet_length(p_instance_id) > __SCHEMA__.taskhub_max_id_bytes()
          OR octet_length(p_session_id) > __SCHEMA__.taskhub_max_id_bytes()
          OR octet_length(p_tag) > __SCHEMA__.taskhub_max_id_bytes() THEN
        RAISE EXCEPTION 'p_instance_id, p_session_id and p_tag must not exceed % bytes',
            __SCHEMA__.taskhub_max_id_bytes() USING ERRCODE = '54000';
    ELSIF jsonb_typeof(p_work_item::jsonb -> 'ActivityExecute')
       IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'p_work_item must be a JSON ActivityExecute work item'
            USING ERRCODE = '22023';
    ELSIF p_session_id = '' THEN
        RAISE EXCEPTION 'p_session_id must be NULL or non-empty' USING ERRCODE = '22023';
    ELSIF p_tag = '' THEN
        RAISE EXCEPTION 'p_tag must be NULL or non-empty' USING ERRCODE = '22023';
    END IF;

    INSERT INTO __SCHEMA__.worker_queue
           (work_item, visible_at, created_at, instance_id, execution_id, activity_id, session_id, tag)
    VALUES (p_work_item, v_now_ts, v_now_ts, p_instance_id, p_execution_id, p_activity_id,
            p_session_id, p_tag);
END;
$$;
