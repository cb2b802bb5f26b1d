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
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_listener_waits boolean;
    v_id             bigint;
    v_now_ts         timestamptz;
    v_priority       smallint;
    v_labels         text[];
    v_rank           timestamptz;
    v_item           jsonb;     -- p_work_item, parsed once
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        EXECUTE 'SELECT __SCHEMA__.enqueue_orchestrator_work($1, $2, $3, $4, $5, $6)'
            USING p_instance_id, p_work_item, p_visible_at, p_orchestration_name,
                  p_orchestration_version, p_execution_id;
        RETURN;
    END IF;
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
    END IF;
    -- A \u0000 escape or nesting past taskhub_max_json_depth: refused as bad
    -- input (22023) like every other write, before the cast below meets it
    -- (the exact check runs only for texts that could fail it).
    IF strpos(p_work_item, '\u0000') > 0
       OR __SCHEMA__.taskhub_json_openers(p_work_item) > __SCHEMA__.taskhub_max_json_depth() THEN
        PERFORM __SCHEMA__.taskhub_storable_json(p_work_item, 'p_work_item');
    END IF;
    v_item := p_work_item::jsonb;
    IF __SCHEMA__.taskhub_work_item_kind(v_item) IS NULL THEN
        RAISE EXCEPTION 'p_work_item must be a JSON work item of the form {"Variant": {...}}'
            USING ERRCODE = '22023';
    END IF;

    -- The id and the clock are drawn first: no volatile call inside the
    -- INSERT (on Citus it would cost a distributed plan on every call).
    v_id := nextval('__SCHEMA__.orchestrator_queue_id_seq');
    v_now_ts := clock_timestamp();
    -- The instance's steering, for the message (none: nothing more written).
    SELECT s.out_priority, s.out_labels, s.out_rank INTO v_priority, v_labels, v_rank
      FROM __SCHEMA__.taskhub_steering_of(p_instance_id, p_visible_at) AS s;
    INSERT INTO __SCHEMA__.orchestrator_queue
           (id, instance_id, work_item, visible_at, created_at, taskhub_priority, taskhub_labels,
            taskhub_orchestration, taskhub_rank)
    -- A start names its orchestration (flow rules by orchestration); for
    -- another message the fetch reads the instance's name if a rule needs it.
    VALUES (v_id, p_instance_id, p_work_item, p_visible_at, v_now_ts, v_priority, v_labels,
            __SCHEMA__.taskhub_orchestration_name_of(v_item), v_rank);
    -- A message for later (a delayed timer) wakes nobody: the poll finds it.
    IF p_visible_at <= v_now_ts THEN
        -- Whether a listener waits: an index probe; taskhub_wake runs only
        -- then (on a busy hub nobody waits). A statement of its own.
        SELECT true INTO v_listener_waits
          FROM __SCHEMA__.taskhub_wakeup_listeners AS l
         WHERE l.queue = 'orchestrator' AND l.waiting
         LIMIT 1;
        IF FOUND THEN
            PERFORM __SCHEMA__.taskhub_wake('orchestrator');
        END IF;
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.enqueue_orchestrator_work(text, text, timestamp with time zone, text, text, bigint) FROM PUBLIC;
