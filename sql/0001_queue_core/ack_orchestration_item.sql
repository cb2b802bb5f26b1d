-- Commit one orchestration turn, all or nothing, and release its lease.
--
-- Only a live lease commits: one that is gone or expired is refused
-- ('Invalid lock token', SQLSTATE TH001), even if nobody has taken the
-- instance yet (see taskhub_lock_orchestration_lease). Every row is keyed on the lease's
-- instance and p_execution_id, never on ids found inside the events.
CREATE FUNCTION __SCHEMA__.ack_orchestration_item(
    p_lock_token           text,
    p_now_ms               bigint,
    p_execution_id         bigint,
    p_history_delta        jsonb,
    p_worker_items         jsonb,
    p_orchestrator_items   jsonb,
    p_metadata             jsonb,
    p_cancelled_activities jsonb DEFAULT '[]'
)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_history   jsonb := coalesce(p_history_delta, '[]');
    v_workers   jsonb := coalesce(p_worker_items, '[]');
    v_orch      jsonb := coalesce(p_orchestrator_items, '[]');
    v_meta      jsonb := coalesce(p_metadata, '{}');
    v_cancelled jsonb := coalesce(p_cancelled_activities, '[]');
    v_instance  text;
    v_now_ms    bigint;
    v_now_ts    timestamptz;
    v_name      text;
    v_version   text;
    v_status    text;
    v_pinned    jsonb;
    v_terminal  boolean;
BEGIN
    -- Shape checks first: bad input changes nothing.
    PERFORM __SCHEMA__.taskhub_require(p_lock_token IS NOT NULL, 'p_lock_token must not be NULL');
    PERFORM __SCHEMA__.taskhub_require(p_execution_id >= 1, 'p_execution_id must be >= 1');
    PERFORM __SCHEMA__.taskhub_require(jsonb_typeof(v_history) = 'array',
        'p_history_delta must be a JSON array');
    PERFORM __SCHEMA__.taskhub_require(jsonb_typeof(v_workers) = 'array',
        'p_worker_items must be a JSON array');
    PERFORM __SCHEMA__.taskhub_require(jsonb_typeof(v_orch) = 'array',
        'p_orchestrator_items must be a JSON array');
    PERFORM __SCHEMA__.taskhub_require(jsonb_typeof(v_meta) = 'object',
        'p_metadata must be a JSON object');
    PERFORM __SCHEMA__.taskhub_require(jsonb_typeof(v_cancelled) = 'array',
        'p_cancelled_activities must be a JSON array');
    PERFORM __SCHEMA__.taskhub_require(NOT EXISTS (
            SELECT 1 FROM jsonb_array_elements(v_history) AS e
             WHERE jsonb_typeof(e) <> 'object'
                OR jsonb_typeof(e -> 'event_id') <> 'number'
                OR (e ->> 'event_id')::numeric < 1
                OR jsonb_typeof(e -> 'event_data') <> 'string'),
        'every p_history_delta element needs a positive event_id and an event_data string');
    PERFORM __SCHEMA__.taskhub_require(NOT EXISTS (
            SELECT 1 FROM jsonb_array_elements(v_workers) AS w
             WHERE __SCHEMA__.taskhub_work_item_kind(w) IS DISTINCT FROM 'ActivityExecute'),
        'every p_worker_items element must be an ActivityExecute work item');
    PERFORM __SCHEMA__.taskhub_require(NOT EXISTS (
            SELECT 1 FROM jsonb_array_elements(v_orch) AS o
             WHERE __SCHEMA__.taskhub_work_item_kind(o) IS NULL),
        'every p_orchestrator_items element must be a work item of the form {"Variant": {...}}');

    -- The lease, locked so that no fetcher can take it over mid-commit.
    SELECT lease.instance_id, lease.now_ms INTO v_instance, v_now_ms
      FROM __SCHEMA__.taskhub_lock_orchestration_lease(
               p_lock_token, p_now_ms, 'Invalid lock token') AS lease;
    v_now_ts := to_timestamp(v_now_ms / 1000.0);

    -- Instance metadata: created only here, and only once name and version are known.
    v_name    := v_meta ->> 'orchestration_name';
    v_version := v_meta ->> 'orchestration_version';
    v_status  := v_meta ->> 'status';
    v_terminal := v_status IN ('Completed', 'Failed', 'ContinuedAsNew');
    IF v_name IS NOT NULL AND v_version IS NOT NULL THEN
        INSERT INTO __SCHEMA__.instances AS i
               (instance_id, orchestration_name, orchestration_version, current_execution_id,
                created_at, updated_at, parent_instance_id)
        VALUES (v_instance, v_name, v_version, p_execution_id, v_now_ts, v_now_ts,
                v_meta ->> 'parent_instance_id')
        ON CONFLICT (instance_id) DO UPDATE
           SET orchestration_name    = EXCLUDED.orchestration_name,
               orchestration_version = EXCLUDED.orchestration_version,
               parent_instance_id    = coalesce(i.parent_instance_id, EXCLUDED.parent_instance_id),
               updated_at            = EXCLUDED.updated_at;
    END IF;

    -- The execution row exists once the turn records something. An empty ack
    -- of an unknown instance (the runtime dropping orphan messages) leaves no
    -- dangling execution behind.
    IF jsonb_array_length(v_history) > 0 OR v_status IS NOT NULL OR v_name IS NOT NULL
       OR EXISTS (SELECT 1 FROM __SCHEMA__.instances AS i WHERE i.instance_id = v_instance) THEN
        INSERT INTO __SCHEMA__.executions (instance_id, execution_id, status, started_at)
        VALUES (v_instance, p_execution_id, 'Running', v_now_ts)
        ON CONFLICT (instance_id, execution_id) DO NOTHING;
    END IF;

    UPDATE __SCHEMA__.instances AS i
       SET current_execution_id = greatest(i.current_execution_id, p_execution_id),
           updated_at = v_now_ts
     WHERE i.instance_id = v_instance;

    -- History is append-only: a duplicate event id fails the whole ack.
    INSERT INTO __SCHEMA__.history
           (instance_id, execution_id, event_id, event_type, event_data, created_at)
    SELECT v_instance, p_execution_id, (e ->> 'event_id')::bigint,
           coalesce(e ->> 'event_type', 'Event'), e ->> 'event_data', v_now_ts
      FROM jsonb_array_elements(v_history) AS e;

    IF v_status IS NOT NULL THEN
        UPDATE __SCHEMA__.executions AS x
           SET status = v_status,
               output = v_meta ->> 'output',
               completed_at = CASE WHEN v_terminal THEN v_now_ts END
         WHERE x.instance_id = v_instance
           AND x.execution_id = p_execution_id;
    END IF;

    -- The runtime sends the pinned version only on an execution's first turn.
    v_pinned := v_meta -> 'pinned_duroxide_version';
    IF jsonb_typeof(v_pinned) = 'object' THEN
        UPDATE __SCHEMA__.executions AS x
           SET duroxide_version_major = (v_pinned ->> 'major')::integer,
               duroxide_version_minor = (v_pinned ->> 'minor')::integer,
               duroxide_version_patch = (v_pinned ->> 'patch')::integer
         WHERE x.instance_id = v_instance
           AND x.execution_id = p_execution_id;
    END IF;

    IF v_meta ->> 'custom_status_action' IN ('set', 'clear') THEN
        UPDATE __SCHEMA__.instances AS i
           SET custom_status = CASE WHEN v_meta ->> 'custom_status_action' = 'set'
                                    THEN v_meta ->> 'custom_status_value' END,
               custom_status_version = i.custom_status_version + 1
         WHERE i.instance_id = v_instance;
    END IF;

    PERFORM __SCHEMA__.taskhub_apply_kv_mutations(
        v_instance, p_execution_id, v_meta -> 'kv_mutations', v_terminal, v_now_ms);

    -- New activities, then cancellations: an activity scheduled and cancelled
    -- in the same turn must end up gone.
    INSERT INTO __SCHEMA__.worker_queue
           (work_item, visible_at, created_at, instance_id, execution_id, activity_id,
            session_id, tag)
    SELECT w::text, v_now_ts, v_now_ts,
           w -> 'ActivityExecute' ->> 'instance',
           (w -> 'ActivityExecute' ->> 'execution_id')::bigint,
           (w -> 'ActivityExecute' ->> 'id')::bigint,
           w -> 'ActivityExecute' ->> 'session_id',
           w -> 'ActivityExecute' ->> 'tag'
      FROM jsonb_array_elements(v_workers) WITH ORDINALITY AS item (w, pos)
     ORDER BY pos;

    DELETE FROM __SCHEMA__.worker_queue AS wq
     USING jsonb_array_elements(v_cancelled) AS c
     WHERE wq.instance_id  = c ->> 'instance'
       AND wq.execution_id = (c ->> 'execution_id')::bigint
       AND wq.activity_id  = (c ->> 'activity_id')::bigint;

    -- Messages to orchestrations; a timer becomes visible when it fires.
    INSERT INTO __SCHEMA__.orchestrator_queue (instance_id, work_item, visible_at, created_at)
    SELECT coalesce(__SCHEMA__.taskhub_target_instance(o), v_instance),
           o::text,
           CASE WHEN (o -> 'TimerFired' ->> 'fire_at_ms')::bigint > 0
                THEN to_timestamp((o -> 'TimerFired' ->> 'fire_at_ms')::bigint / 1000.0)
                ELSE v_now_ts END,
           v_now_ts
      FROM jsonb_array_elements(v_orch) WITH ORDINALITY AS item (o, pos)
     ORDER BY pos;

    -- The turn's own messages are consumed; messages that arrived during the
    -- turn carry no token and stay for the next one.
    DELETE FROM __SCHEMA__.orchestrator_queue AS q WHERE q.lock_token = p_lock_token;
    DELETE FROM __SCHEMA__.instance_locks AS il
     WHERE il.instance_id = v_instance
       AND il.lock_token = p_lock_token;
END;
$$;
