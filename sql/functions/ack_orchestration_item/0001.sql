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
    v_problem   text;
    v_instance  text;
    v_now_ms    bigint;
    v_now_ts    timestamptz;
    v_name      text;
    v_version   text;
    v_status    text;
    v_pinned    jsonb;
    v_terminal  boolean;
    v_status_action text;
BEGIN
    -- Shape checks first: bad input changes nothing.
    v_problem := CASE
        WHEN p_lock_token IS NULL THEN 'p_lock_token must not be NULL'
        WHEN p_execution_id IS NULL OR p_execution_id < 1 THEN 'p_execution_id must be >= 1'
        WHEN jsonb_typeof(v_history) <> 'array' THEN 'p_history_delta must be a JSON array'
        WHEN jsonb_typeof(v_workers) <> 'array' THEN 'p_worker_items must be a JSON array'
        WHEN jsonb_typeof(v_orch) <> 'array' THEN 'p_orchestrator_items must be a JSON array'
        WHEN jsonb_typeof(v_meta) <> 'object' THEN 'p_metadata must be a JSON object'
        WHEN jsonb_typeof(v_cancelled) <> 'array' THEN 'p_cancelled_activities must be a JSON array'
    END;
    IF v_problem IS NULL
       AND (v_history <> '[]' OR v_workers <> '[]' OR v_orch <> '[]') THEN
        SELECT CASE
            WHEN EXISTS (SELECT 1
                           FROM (SELECT e FROM jsonb_array_elements(v_history) AS e
                                 UNION ALL SELECT w FROM jsonb_array_elements(v_workers) AS w
                                 UNION ALL SELECT o FROM jsonb_array_elements(v_orch) AS o)
                                AS element (e)
                          WHERE pg_column_size(e) > __SCHEMA__.taskhub_max_payload_bytes())
            THEN format('an event or work item is larger than %s bytes',
                        __SCHEMA__.taskhub_max_payload_bytes())
            WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(v_history) AS e
                          WHERE jsonb_typeof(e) <> 'object'
                             OR jsonb_typeof(e -> 'event_id') IS DISTINCT FROM 'number'
                             OR (e ->> 'event_id')::numeric < 1
                             OR jsonb_typeof(e -> 'event_data') IS DISTINCT FROM 'string')
            THEN 'every p_history_delta element needs a positive event_id and an event_data string'
            WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(v_workers) AS w
                          WHERE __SCHEMA__.taskhub_work_item_kind(w)
                                IS DISTINCT FROM 'ActivityExecute')
            THEN 'every p_worker_items element must be an ActivityExecute work item'
            WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(v_orch) AS o
                          WHERE __SCHEMA__.taskhub_work_item_kind(o) IS NULL)
            THEN 'every p_orchestrator_items element must be a work item of the form {"Variant": {...}}'
        END INTO v_problem;
    END IF;
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION '%', v_problem USING ERRCODE = '22023';
    END IF;

    -- The lease, locked so that no fetcher can take it over mid-commit.
    SELECT lease.instance_id, lease.now_ms INTO v_instance, v_now_ms
      FROM __SCHEMA__.taskhub_lock_orchestration_lease(
               p_lock_token, p_now_ms, 'Invalid lock token') AS lease;
    v_now_ts := to_timestamp(v_now_ms / 1000.0);

    v_name    := v_meta ->> 'orchestration_name';
    v_version := v_meta ->> 'orchestration_version';
    v_status  := v_meta ->> 'status';
    v_terminal := v_status IN ('Completed', 'Failed', 'ContinuedAsNew');
    v_pinned  := CASE WHEN jsonb_typeof(v_meta -> 'pinned_duroxide_version') = 'object'
                      THEN v_meta -> 'pinned_duroxide_version' END;
    -- The last CustomStatusUpdated of the turn: 'set' or 'clear' (the runtime
    -- bumps the version either way); anything else leaves it alone.
    v_status_action := CASE WHEN v_meta ->> 'custom_status_action' IN ('set', 'clear')
                            THEN v_meta ->> 'custom_status_action' END;

    -- The instance row: created only here, and only once name and version are
    -- known; its current execution, custom status and update time follow the turn.
    IF v_name IS NOT NULL AND v_version IS NOT NULL THEN
        INSERT INTO __SCHEMA__.instances AS i
               (instance_id, orchestration_name, orchestration_version, current_execution_id,
                created_at, updated_at, parent_instance_id, custom_status, custom_status_version)
        VALUES (v_instance, v_name, v_version, p_execution_id, v_now_ts, v_now_ts,
                v_meta ->> 'parent_instance_id',
                CASE WHEN v_status_action = 'set' THEN v_meta ->> 'custom_status_value' END,
                CASE WHEN v_status_action IS NULL THEN 0 ELSE 1 END)
        ON CONFLICT (instance_id) DO UPDATE
           SET orchestration_name    = EXCLUDED.orchestration_name,
               orchestration_version = EXCLUDED.orchestration_version,
               parent_instance_id    = coalesce(i.parent_instance_id, EXCLUDED.parent_instance_id),
               current_execution_id  = greatest(i.current_execution_id, p_execution_id),
               updated_at            = EXCLUDED.updated_at,
               custom_status         = CASE WHEN v_status_action IS NULL THEN i.custom_status
                                            ELSE EXCLUDED.custom_status END,
               custom_status_version = i.custom_status_version
                                       + CASE WHEN v_status_action IS NULL THEN 0 ELSE 1 END;
    ELSE
        UPDATE __SCHEMA__.instances AS i
           SET current_execution_id  = greatest(i.current_execution_id, p_execution_id),
               updated_at            = v_now_ts,
               custom_status         = CASE WHEN v_status_action IS NULL THEN i.custom_status
                                            WHEN v_status_action = 'set'
                                            THEN v_meta ->> 'custom_status_value' END,
               custom_status_version = i.custom_status_version
                                       + CASE WHEN v_status_action IS NULL THEN 0 ELSE 1 END
         WHERE i.instance_id = v_instance;
    END IF;

    -- The execution row exists once the turn records something (an empty ack
    -- of an unknown instance, the runtime dropping orphan messages, leaves no
    -- dangling execution behind). Status, output and the pinned runtime
    -- version (sent on an execution's first turn only) are written as given.
    IF v_history <> '[]' OR v_status IS NOT NULL OR v_name IS NOT NULL OR FOUND THEN
        INSERT INTO __SCHEMA__.executions AS x
               (instance_id, execution_id, status, output, started_at, completed_at,
                duroxide_version_major, duroxide_version_minor, duroxide_version_patch)
        VALUES (v_instance, p_execution_id, coalesce(v_status, 'Running'),
                CASE WHEN v_status IS NOT NULL THEN v_meta ->> 'output' END,
                v_now_ts, CASE WHEN v_terminal THEN v_now_ts END,
                (v_pinned ->> 'major')::integer, (v_pinned ->> 'minor')::integer,
                (v_pinned ->> 'patch')::integer)
        ON CONFLICT (instance_id, execution_id) DO UPDATE
           SET status       = CASE WHEN v_status IS NULL THEN x.status ELSE EXCLUDED.status END,
               output       = CASE WHEN v_status IS NULL THEN x.output ELSE EXCLUDED.output END,
               completed_at = CASE WHEN v_status IS NULL THEN x.completed_at
                                   ELSE EXCLUDED.completed_at END,
               duroxide_version_major = CASE WHEN v_pinned IS NULL THEN x.duroxide_version_major
                                             ELSE EXCLUDED.duroxide_version_major END,
               duroxide_version_minor = CASE WHEN v_pinned IS NULL THEN x.duroxide_version_minor
                                             ELSE EXCLUDED.duroxide_version_minor END,
               duroxide_version_patch = CASE WHEN v_pinned IS NULL THEN x.duroxide_version_patch
                                             ELSE EXCLUDED.duroxide_version_patch END
         WHERE v_status IS NOT NULL OR v_pinned IS NOT NULL;
    END IF;

    -- History is append-only: a duplicate event id fails the whole ack.
    IF v_history <> '[]' THEN
        INSERT INTO __SCHEMA__.history
               (instance_id, execution_id, event_id, event_type, event_data, created_at)
        SELECT v_instance, p_execution_id, (e ->> 'event_id')::bigint,
               coalesce(e ->> 'event_type', 'Event'), e ->> 'event_data', v_now_ts
          FROM jsonb_array_elements(v_history) AS e;
    END IF;

    IF v_terminal OR jsonb_array_length(coalesce(v_meta -> 'kv_mutations', '[]')) > 0 THEN
        PERFORM __SCHEMA__.taskhub_apply_kv_mutations(
            v_instance, p_execution_id, v_meta -> 'kv_mutations', v_terminal, v_now_ms);
    END IF;

    -- New activities, then cancellations: an activity scheduled and cancelled
    -- in the same turn must end up gone.
    IF jsonb_array_length(v_workers) > 0 THEN
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
    END IF;

    IF jsonb_array_length(v_cancelled) > 0 THEN
        DELETE FROM __SCHEMA__.worker_queue AS wq
         USING jsonb_array_elements(v_cancelled) AS c
         WHERE wq.instance_id  = c ->> 'instance'
           AND wq.execution_id = (c ->> 'execution_id')::bigint
           AND wq.activity_id  = (c ->> 'activity_id')::bigint;
    END IF;

    -- Messages to orchestrations; a timer becomes visible when it fires.
    IF jsonb_array_length(v_orch) > 0 THEN
        INSERT INTO __SCHEMA__.orchestrator_queue (instance_id, work_item, visible_at, created_at)
        SELECT coalesce(__SCHEMA__.taskhub_target_instance(o), v_instance),
               o::text,
               CASE WHEN (o -> 'TimerFired' ->> 'fire_at_ms')::bigint > 0
                    THEN to_timestamp((o -> 'TimerFired' ->> 'fire_at_ms')::bigint / 1000.0)
                    ELSE v_now_ts END,
               v_now_ts
          FROM jsonb_array_elements(v_orch) WITH ORDINALITY AS item (o, pos)
         ORDER BY pos;
    END IF;

    -- The turn's own messages are consumed (messages that arrived during the
    -- turn carry no token and stay for the next one), and the lease ends.
    WITH consumed AS (
        DELETE FROM __SCHEMA__.orchestrator_queue AS q WHERE q.lock_token = p_lock_token
    )
    DELETE FROM __SCHEMA__.instance_locks AS il
     WHERE il.instance_id = v_instance
       AND il.lock_token = p_lock_token;
END;
$$;
