-- Put a dead letter back on its queue as a fresh message (attempt count 0)
-- and remove it from dead_letters. Returns the message's new queue id.
CREATE FUNCTION __SCHEMA__.taskhub_requeue_dead_letter(p_dead_letter_id bigint)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_letter __SCHEMA__.dead_letters;
    v_new_id bigint;
    v_steer  record;
BEGIN
    DELETE FROM __SCHEMA__.dead_letters AS d WHERE d.id = p_dead_letter_id
    RETURNING * INTO v_letter;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'dead letter % not found', p_dead_letter_id USING ERRCODE = 'P0002';
    END IF;
    -- Its instance's steering, as when it was queued.
    SELECT * INTO v_steer
      FROM __SCHEMA__.taskhub_steering_of(v_letter.instance_id, clock_timestamp());
    IF v_letter.source_queue = 'orchestrator' THEN
        INSERT INTO __SCHEMA__.orchestrator_queue
               (instance_id, work_item, visible_at, created_at, taskhub_priority, taskhub_labels,
                taskhub_orchestration, taskhub_rank)
        VALUES (v_letter.instance_id, v_letter.work_item, clock_timestamp(), clock_timestamp(),
                v_steer.out_priority, v_steer.out_labels,
                __SCHEMA__.taskhub_orchestration_name_of(
                    __SCHEMA__.taskhub_try_jsonb(v_letter.work_item)),
                v_steer.out_rank)
        RETURNING id INTO v_new_id;
    ELSE
        INSERT INTO __SCHEMA__.worker_queue
               (work_item, visible_at, created_at, instance_id, execution_id, activity_id,
                session_id, tag, taskhub_activity_name, taskhub_priority, taskhub_labels,
                taskhub_rank)
        VALUES (v_letter.work_item, clock_timestamp(), clock_timestamp(), v_letter.instance_id,
                v_letter.execution_id, v_letter.activity_id, v_letter.session_id, v_letter.tag,
                __SCHEMA__.taskhub_activity_name_of(v_letter.work_item), v_steer.out_priority,
                v_steer.out_labels, v_steer.out_rank)
        RETURNING id INTO v_new_id;
    END IF;
    RETURN v_new_id;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_requeue_dead_letter(bigint) FROM PUBLIC;
