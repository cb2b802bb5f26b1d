-- Put one activity execution on the worker queue, visible at once.
-- The identity columns (instance, execution, activity id) let a later turn
-- cancel it; session_id and tag route it to the right workers, who are woken
-- at commit (taskhub_wake).
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
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_priority       smallint;
    v_labels         text[];
    v_rank           timestamptz;
    v_now_ts         timestamptz := to_timestamp(__SCHEMA__.taskhub_clock_ms(NULL) / 1000.0);
    v_listener_waits boolean;
    v_id             bigint;
    v_item           jsonb;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        EXECUTE 'SELECT __SCHEMA__.enqueue_worker_work($1, $2, $3, $4, $5, $6, $7)'
            USING p_work_item, p_now_ms, p_instance_id, p_execution_id, p_activity_id, p_session_id,
                  p_tag;
        RETURN;
    END IF;
    IF octet_length(p_work_item) > __SCHEMA__.taskhub_max_payload_bytes() THEN
        RAISE EXCEPTION 'p_work_item is larger than % bytes', __SCHEMA__.taskhub_max_payload_bytes()
            USING ERRCODE = '54000';
    ELSIF octet_length(p_instance_id) > __SCHEMA__.taskhub_max_id_bytes()
          OR octet_length(p_session_id) > __SCHEMA__.taskhub_max_id_bytes()
          OR octet_length(p_tag) > __SCHEMA__.taskhub_max_id_bytes() THEN
        RAISE EXCEPTION 'p_instance_id, p_session_id and p_tag must not exceed % bytes',
            __SCHEMA__.taskhub_max_id_bytes() USING ERRCODE = '54000';
    END IF;
    -- A \u0000 escape or nesting past taskhub_max_json_depth: refused as bad
    -- input (22023) like every other write, before the cast below meets it
    -- (the exact check runs only for texts that could fail it).
    IF strpos(p_work_item, '\u0000') > 0
       OR __SCHEMA__.taskhub_json_openers(p_work_item) > __SCHEMA__.taskhub_max_json_depth() THEN
        PERFORM __SCHEMA__.taskhub_storable_json(p_work_item, 'p_work_item');
    END IF;
    v_item := p_work_item::jsonb -> 'ActivityExecute';
    IF jsonb_typeof(v_item) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'p_work_item must be a JSON ActivityExecute work item'
            USING ERRCODE = '22023';
    ELSIF p_session_id = '' THEN
        RAISE EXCEPTION 'p_session_id must be NULL or non-empty' USING ERRCODE = '22023';
    ELSIF p_tag = '' THEN
        RAISE EXCEPTION 'p_tag must be NULL or non-empty' USING ERRCODE = '22023';
    END IF;

    -- The id is drawn first: no volatile call inside the INSERT (on Citus it
    -- would cost a distributed plan on every call).
    v_id := nextval('__SCHEMA__.worker_queue_id_seq');
    -- The instance's steering, for the item (none: nothing more written).
    SELECT s.out_priority, s.out_labels, s.out_rank INTO v_priority, v_labels, v_rank
      FROM __SCHEMA__.taskhub_steering_of(coalesce(p_instance_id, v_item ->> 'instance'),
                                          v_now_ts) AS s;
    INSERT INTO __SCHEMA__.worker_queue
           (id, work_item, visible_at, created_at, instance_id, execution_id, activity_id,
            session_id, tag, taskhub_activity_name, taskhub_priority, taskhub_labels, taskhub_rank)
    VALUES (v_id, p_work_item, v_now_ts, v_now_ts, p_instance_id, p_execution_id, p_activity_id,
            p_session_id, p_tag, v_item ->> 'name', v_priority, v_labels, v_rank);
    -- Whether a listener waits: an index probe; taskhub_wake runs only then
    -- (on a busy hub nobody waits). A statement of its own.
    SELECT true INTO v_listener_waits
      FROM __SCHEMA__.taskhub_wakeup_listeners AS l
     WHERE l.queue = 'worker' AND l.waiting
     LIMIT 1;
    IF FOUND THEN
        PERFORM __SCHEMA__.taskhub_wake('worker', p_tag);
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.enqueue_worker_work(text, bigint, text, bigint, bigint, text, text) FROM PUBLIC;
