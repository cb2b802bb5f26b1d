-- Put one message on the orchestrator queue.
--
-- Never creates the instance: instances are created by the first ack of their
-- first turn. p_orchestration_name, p_orchestration_version and
-- p_execution_id exist for signature compatibility and are ignored.
CREATE FUNCTION __SCHEMA__.enqueue_orchestrator_work(
    p_instance_id           text,
    p_work_item             text,
    p_visible_at            timestamptz,
    p_orchestration_name    text   DEFAULT NULL,
    p_orchestration_version text   DEFAULT NULL,
    p_execution_id          bigint DEFAULT NULL
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_instance_id IS NULL OR p_instance_id = '' THEN
        RAISE EXCEPTION 'p_instance_id must be a non-empty text' USING ERRCODE = '22023';
    ELSIF octet_length(p_instance_id) > __SCHEMA__.taskhub_max_id_bytes() THEN
        RAISE EXCEPTION 'p_instance_id is longer than % bytes', __SCHEMA__.taskhub_max_id_bytes()
            USING ERRCODE = '54000';
    ELSIF octet_length(p_work_item) > __SCHEMA__.taskhub_max_payload_bytes() THEN
        RAISE EXCEPTION 'p_work_item is larger than % bytes', __SCHEMA__.taskhub_max_payload_bytes()
            USING ERRCODE = '54000';
    ELSIF p_visible_at IS NULL THEN
        RAISE EXCEPTION 'p_visible_at must not be NULL' USING ERRCODE = '22023';
    ELSIF __SCHEMA__.taskhub_work_item_kind(p_work_item::jsonb) IS NULL THEN
        RAISE EXCEPTION 'p_work_item must be a JSON work item of the form {"Variant": {...}}'
            USING ERRCODE = '22023';
    END IF;

    INSERT INTO __SCHEMA__.orchestrator_queue (instance_id, work_item, visible_at, created_at)
    VALUES (p_instance_id, p_work_item, p_visible_at, clock_timestamp());
END;
$$;
