-- Commit one orchestration turn, all or nothing, and release its lease.
--
-- Only a live lease commits: one that is gone or expired is refused
-- ('Invalid lock token', SQLSTATE TH001), even if nobody has taken the
-- instance yet (see taskhub_lock_orchestration_lease). Every row is keyed on the lease's
-- instance and p_execution_id, never on ids found inside the events.
--
-- A turn that records the provider's own transient database failure is not
-- committed: it is given back for redelivery (see transient_failures.sql).
-- Events and items no fetch could hand over (a \u0000 escape, nesting
-- deeper than the runtime decodes: taskhub_max_json_depth) are refused.
--
-- Each array is written a row at a time where Citus runs and in one
-- INSERT ... SELECT elsewhere; both check its elements with the same checks,
-- __TOO_LARGE(x)__ and the like, written once in provider/deploy/sql_checks.py
-- and written out when the file is rendered.
--
-- Bad input changes nothing: the shapes of the arguments are checked first,
-- and each element of the arrays by the statement that writes it (a refused
-- element fails the call, which rolls back what it wrote).
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
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
-- Never a bitmap scan: it leaves the entries of deleted messages unmarked
-- (fetch_orchestration_item says why that matters).
SET enable_bitmapscan = off
-- With seq scans priced out, plan costs pass jit_above_cost, and compiling each
-- query would take longer than running it (12-19 ms per fetch at depth).
SET jit = off
AS $$
DECLARE
    v_history   jsonb := coalesce(p_history_delta, '[]');
    v_workers   jsonb := coalesce(p_worker_items, '[]');
    v_orch      jsonb := coalesce(p_orchestrator_items, '[]');
    v_meta      jsonb := coalesce(p_metadata, '{}');
    v_cancelled jsonb := coalesce(p_cancelled_activities, '[]');
    v_locked_until bigint;
    v_instance  text;
    v_now_ms    bigint;
    v_now_ts    timestamptz;
    v_name      text;
    v_version   text;
    v_status    text;
    v_pinned    jsonb;
    v_terminal  boolean;
    v_status_action text;
    v_failure   record;
    v_policy    text;
    v_element   jsonb;
    v_text      text;
    v_id        bigint;
    v_fire_at_ms bigint;
    v_wakes     boolean := false;
    v_listener_waits boolean;
    -- The turn's steering (its lease's: the fetch took it from the turn's
    -- messages), given to the work it queues, and the rank of that work.
    v_priority  smallint;
    v_labels    text[];
    -- The instance's orchestration (the turn's metadata, else its lease's),
    -- given to its own work for the flow rules by orchestration.
    v_self_name text;
    v_rank      timestamptz;
    v_target    text;
    v_to_priority smallint;
    v_to_labels text[];
    v_visible   timestamptz;
    v_aging_ms  integer;    -- priority_aging_ms, read when some work has a priority
    -- On a server that runs Citus, a VALUES row at a time (each planned on
    -- the hub's node like a plain statement); elsewhere one INSERT ... SELECT
    -- for a whole array (docs/scale-out.md).
    v_one_table boolean := current_setting('citus.version', true) IS NOT NULL;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        EXECUTE 'SELECT __SCHEMA__.ack_orchestration_item($1, $2, $3, $4, $5, $6, $7, $8)'
            USING p_lock_token, p_now_ms, p_execution_id, p_history_delta, p_worker_items,
                  p_orchestrator_items, p_metadata, p_cancelled_activities;
        RETURN;
    END IF;
    -- The shapes of the arguments, in one test; the checks one by one only
    -- to say which is wrong.
    IF p_lock_token IS NULL OR p_execution_id IS NULL OR p_execution_id < 1
       OR jsonb_typeof(v_history) <> 'array' OR jsonb_typeof(v_workers) <> 'array'
       OR jsonb_typeof(v_orch) <> 'array' OR jsonb_typeof(v_meta) <> 'object'
       OR jsonb_typeof(v_cancelled) <> 'array' THEN
        IF p_lock_token IS NULL THEN
            RAISE EXCEPTION 'p_lock_token must not be NULL' USING ERRCODE = '22023';
        ELSIF p_execution_id IS NULL OR p_execution_id < 1 THEN
            RAISE EXCEPTION 'p_execution_id must be >= 1' USING ERRCODE = '22023';
        ELSIF jsonb_typeof(v_history) <> 'array' THEN
            RAISE EXCEPTION 'p_history_delta must be a JSON array' USING ERRCODE = '22023';
        ELSIF jsonb_typeof(v_workers) <> 'array' THEN
            RAISE EXCEPTION 'p_worker_items must be a JSON array' USING ERRCODE = '22023';
        ELSIF jsonb_typeof(v_orch) <> 'array' THEN
            RAISE EXCEPTION 'p_orchestrator_items must be a JSON array' USING ERRCODE = '22023';
        ELSIF jsonb_typeof(v_meta) <> 'object' THEN
            RAISE EXCEPTION 'p_metadata must be a JSON object' USING ERRCODE = '22023';
        END IF;
        RAISE EXCEPTION 'p_cancelled_activities must be a JSON array' USING ERRCODE = '22023';
    END IF;

    -- The lease, locked so that no fetcher can take it over mid-commit (as
    -- taskhub_lock_orchestration_lease does; inline here, the hot path). A
    -- lock waited for (a renewal or abandon committing) moves the clock on:
    -- the lease must still be live after the wait.
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    -- not by instance: the contract names the lease by its token alone.
    SELECT il.instance_id, il.locked_until, il.taskhub_priority, il.taskhub_labels,
           il.taskhub_orchestration
      INTO v_instance, v_locked_until, v_priority, v_labels, v_self_name
      FROM __SCHEMA__.instance_locks AS il
     WHERE il.lock_token = p_lock_token
       AND il.locked_until > v_now_ms
       FOR UPDATE;
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    IF v_instance IS NULL OR v_locked_until <= v_now_ms THEN
        SELECT il.locked_until INTO v_locked_until
          FROM __SCHEMA__.instance_locks AS il
         WHERE il.lock_token = p_lock_token;
        RAISE EXCEPTION 'Invalid lock token'
            USING ERRCODE = 'TH001',
                  DETAIL = __SCHEMA__.taskhub_lease_lost_detail(v_locked_until, v_now_ms);
    END IF;
    v_now_ts := to_timestamp(v_now_ms / 1000.0);
    v_status  := v_meta ->> 'status';
    -- The setting is read only when the turn queues work that may have a
    -- priority: its own, or a message to another (steered) instance.
    IF v_priority > 0
       OR EXISTS (SELECT 1
                    FROM jsonb_array_elements(v_orch) AS o
                   WHERE NOT o ? 'StartOrchestration'
                     AND __SCHEMA__.taskhub_target_instance(o) <> v_instance) THEN
        v_aging_ms := __SCHEMA__.taskhub_priority_aging_ms();
        v_rank := __SCHEMA__.taskhub_rank_of(v_now_ts, v_priority, v_aging_ms);
    END IF;

    -- The runtime records its provider's transient failure as the end of the
    -- orchestration; the failed call rolled back, so give the turn back.
    IF v_status = 'Failed' THEN
        SELECT f.operation, f.message, f.condition INTO v_failure
          FROM __SCHEMA__.taskhub_transient_failure_of(v_history) AS f;
        IF FOUND THEN
            SELECT s.value INTO v_policy
              FROM __SCHEMA__.taskhub_settings AS s
             WHERE s.name = 'transient_failure_policy';
            IF coalesce(v_policy, 'retry') = 'retry' THEN
                PERFORM __SCHEMA__.taskhub_give_back_failed_turn(
                    p_lock_token, v_instance, p_execution_id, v_failure.operation,
                    v_failure.condition, v_failure.message, v_now_ms);
                RETURN;
            END IF;
        END IF;
    END IF;

    v_name    := v_meta ->> 'orchestration_name';
    v_self_name := coalesce(v_name, v_self_name);
    v_version := v_meta ->> 'orchestration_version';
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
    IF v_status IS NOT NULL OR v_pinned IS NOT NULL THEN
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
                                             ELSE EXCLUDED.duroxide_version_patch END;
    ELSIF v_history <> '[]' OR v_name IS NOT NULL OR FOUND THEN
        -- Nothing of it changes: only make sure it exists. A read first:
        -- after the first turn of an execution it is there, and a read costs
        -- less than an INSERT (on Citus, much less). DO NOTHING leaves an
        -- existing row unlocked and unwritten.
        PERFORM 1
          FROM __SCHEMA__.executions AS x
         WHERE x.instance_id = v_instance AND x.execution_id = p_execution_id;
        IF NOT FOUND THEN
            INSERT INTO __SCHEMA__.executions (instance_id, execution_id, status, started_at)
            VALUES (v_instance, p_execution_id, 'Running', v_now_ts)
            ON CONFLICT (instance_id, execution_id) DO NOTHING;
        END IF;
    END IF;

    -- History is append-only: a duplicate event id fails the whole ack. An
    -- event no fetch could hand over fails it too (taskhub_storable_json;
    -- the exact check runs only for texts that could fail it: with a
    -- \u0000, or with enough brackets to nest too deep), and so does one
    -- that is not JSON (the cast to json: each event is validated once, here,
    -- and a fetch then hands it over unparsed). The failed call leaves
    -- nothing behind.
    IF v_history <> '[]' AND v_one_table THEN
        FOR v_element IN SELECT e FROM jsonb_array_elements(v_history) AS e LOOP
            IF __TOO_LARGE(v_element)__ THEN
                PERFORM __SCHEMA__.taskhub_refuse_turn_element(1);
            ELSIF __NOT_A_HISTORY_EVENT(v_element)__ THEN
                PERFORM __SCHEMA__.taskhub_refuse_turn_element(2);
            END IF;
            v_text := v_element ->> 'event_data';
            IF strpos(v_text, '\u0000') > 0
               OR __SCHEMA__.taskhub_json_openers(v_text) > __SCHEMA__.taskhub_max_json_depth() THEN
                v_text := __SCHEMA__.taskhub_storable_json(
                    v_text, 'event ' || (v_element ->> 'event_id'));
            END IF;
            INSERT INTO __SCHEMA__.history
                   (instance_id, execution_id, event_id, event_type, event_data, created_at)
            VALUES (v_instance, p_execution_id, (v_element ->> 'event_id')::bigint,
                    coalesce(v_element ->> 'event_type', 'Event'), v_text::json, v_now_ts);
        END LOOP;
    ELSIF v_history <> '[]' THEN
        -- plain PostgreSQL only: one INSERT ... SELECT for the whole array (on a
        -- server that runs Citus, the loop).
        INSERT INTO __SCHEMA__.history
               (instance_id, execution_id, event_id, event_type, event_data, created_at)
        -- No LATERAL here: Citus cannot plan an INSERT ... SELECT with one.
        SELECT v_instance, p_execution_id, (e ->> 'event_id')::bigint,
               coalesce(e ->> 'event_type', 'Event'),
               (CASE WHEN strpos(e ->> 'event_data', '\u0000') > 0
                          OR __SCHEMA__.taskhub_json_openers(e ->> 'event_data')
                             > __SCHEMA__.taskhub_max_json_depth()
                     THEN __SCHEMA__.taskhub_storable_json(e ->> 'event_data',
                                                           'event ' || (e ->> 'event_id'))
                     ELSE e ->> 'event_data' END)::json,
               v_now_ts
          FROM jsonb_array_elements(v_history) AS e
         WHERE CASE
                   WHEN __TOO_LARGE(e)__
                   THEN __SCHEMA__.taskhub_refuse_turn_element(1)
                   WHEN __NOT_A_HISTORY_EVENT(e)__
                   THEN __SCHEMA__.taskhub_refuse_turn_element(2)
                   ELSE true
               END;
    END IF;

    IF v_terminal OR jsonb_array_length(coalesce(v_meta -> 'kv_mutations', '[]')) > 0 THEN
        PERFORM __SCHEMA__.taskhub_apply_kv_mutations(
            v_instance, p_execution_id, v_meta -> 'kv_mutations', v_terminal, v_now_ms);
    END IF;

    -- New activities, then cancellations: an activity scheduled and cancelled
    -- in the same turn must end up gone.
    IF jsonb_array_length(v_workers) > 0 THEN
        IF v_one_table THEN
            FOR v_element IN SELECT w FROM jsonb_array_elements(v_workers) AS w LOOP
                IF __TOO_LARGE(v_element)__ THEN
                    PERFORM __SCHEMA__.taskhub_refuse_turn_element(1);
                ELSIF __NOT_AN_ACTIVITY_ITEM(v_element)__ THEN
                    PERFORM __SCHEMA__.taskhub_refuse_turn_element(3);
                END IF;
                -- Every level of a jsonb value takes at least 8 bytes.
                v_text := CASE WHEN pg_column_size(v_element) >= 8 * __SCHEMA__.taskhub_max_json_depth()
                               THEN __SCHEMA__.taskhub_storable_json(v_element::text,
                                                                     'an activity item')
                               ELSE v_element::text END;
                -- The id is drawn first: no volatile call inside the INSERT.
                v_id := nextval('__SCHEMA__.worker_queue_id_seq');
                INSERT INTO __SCHEMA__.worker_queue
                       (id, work_item, visible_at, created_at, instance_id, execution_id,
                        activity_id, session_id, tag, taskhub_activity_name, taskhub_priority,
                        taskhub_labels, taskhub_orchestration, taskhub_rank)
                VALUES (v_id, v_text, v_now_ts, v_now_ts,
                        v_element -> 'ActivityExecute' ->> 'instance',
                        (v_element -> 'ActivityExecute' ->> 'execution_id')::bigint,
                        (v_element -> 'ActivityExecute' ->> 'id')::bigint,
                        v_element -> 'ActivityExecute' ->> 'session_id',
                        v_element -> 'ActivityExecute' ->> 'tag',
                        v_element -> 'ActivityExecute' ->> 'name',
                        v_priority, v_labels, v_self_name, v_rank);
            END LOOP;
        ELSE
            -- plain PostgreSQL only: one INSERT ... SELECT for the whole array (on a
            -- server that runs Citus, the loop).
            INSERT INTO __SCHEMA__.worker_queue
                   (work_item, visible_at, created_at, instance_id, execution_id, activity_id,
                    session_id, tag, taskhub_activity_name, taskhub_priority, taskhub_labels,
                    taskhub_orchestration, taskhub_rank)
            -- Every level of a jsonb value takes at least 8 bytes.
            SELECT CASE WHEN pg_column_size(w) >= 8 * __SCHEMA__.taskhub_max_json_depth()
                        THEN __SCHEMA__.taskhub_storable_json(w::text, 'an activity item')
                        ELSE w::text END,
                   v_now_ts, v_now_ts,
                   w -> 'ActivityExecute' ->> 'instance',
                   (w -> 'ActivityExecute' ->> 'execution_id')::bigint,
                   (w -> 'ActivityExecute' ->> 'id')::bigint,
                   w -> 'ActivityExecute' ->> 'session_id',
                   w -> 'ActivityExecute' ->> 'tag',
                   w -> 'ActivityExecute' ->> 'name',
                   v_priority, v_labels, v_self_name, v_rank
              FROM jsonb_array_elements(v_workers) WITH ORDINALITY AS item (w, pos)
             WHERE CASE
                       WHEN __TOO_LARGE(w)__
                       THEN __SCHEMA__.taskhub_refuse_turn_element(1)
                       WHEN __NOT_AN_ACTIVITY_ITEM(w)__
                       THEN __SCHEMA__.taskhub_refuse_turn_element(3)
                       ELSE true
                   END
             ORDER BY pos;
        END IF;
        -- Asked first: on a busy hub no worker waits, and the tags need no look.
        SELECT true INTO v_listener_waits
          FROM __SCHEMA__.taskhub_wakeup_listeners AS l
         WHERE l.queue = 'worker' AND l.waiting
         LIMIT 1;
        IF FOUND THEN
            PERFORM __SCHEMA__.taskhub_wake('worker', tags.tag)
               FROM (SELECT DISTINCT w -> 'ActivityExecute' ->> 'tag' AS tag
                       FROM jsonb_array_elements(v_workers) AS w) AS tags;
        END IF;
    END IF;

    IF jsonb_array_length(v_cancelled) > 0 THEN
        FOR v_element IN SELECT c FROM jsonb_array_elements(v_cancelled) AS c LOOP
            DELETE FROM __SCHEMA__.worker_queue AS wq
             WHERE wq.instance_id  = v_element ->> 'instance'
               AND wq.execution_id = (v_element ->> 'execution_id')::bigint
               AND wq.activity_id  = (v_element ->> 'activity_id')::bigint;
        END LOOP;
    END IF;

    -- Messages to orchestrations; a timer becomes visible when it fires.
    IF jsonb_array_length(v_orch) > 0 THEN
        IF v_one_table THEN
            FOR v_element IN SELECT o FROM jsonb_array_elements(v_orch) AS o LOOP
                IF __TOO_LARGE(v_element)__ THEN
                    PERFORM __SCHEMA__.taskhub_refuse_turn_element(1);
                ELSIF __NOT_AN_ORCHESTRATOR_ITEM(v_element)__ THEN
                    PERFORM __SCHEMA__.taskhub_refuse_turn_element(4);
                END IF;
                -- Every level of a jsonb value takes at least 8 bytes.
                v_text := CASE WHEN pg_column_size(v_element) >= 8 * __SCHEMA__.taskhub_max_json_depth()
                               THEN __SCHEMA__.taskhub_storable_json(v_element::text,
                                                                     'an orchestrator item')
                               ELSE v_element::text END;
                v_fire_at_ms := (v_element -> 'TimerFired' ->> 'fire_at_ms')::bigint;
                v_visible := CASE WHEN v_fire_at_ms > 0 THEN to_timestamp(v_fire_at_ms / 1000.0)
                                  ELSE v_now_ts END;
                -- The steering of the instance it is for: this turn's for
                -- its own messages and for a sub-orchestration it starts.
                v_target := coalesce(__SCHEMA__.taskhub_target_instance(v_element), v_instance);
                v_to_priority := v_priority;
                v_to_labels := v_labels;
                IF v_target <> v_instance AND NOT v_element ? 'StartOrchestration' THEN
                    SELECT nullif(l.priority, 0), nullif(l.labels, '{}')
                      INTO v_to_priority, v_to_labels
                      FROM __SCHEMA__.taskhub_instance_labels AS l
                     WHERE l.instance_id = v_target;
                END IF;
                v_id := nextval('__SCHEMA__.orchestrator_queue_id_seq');
                INSERT INTO __SCHEMA__.orchestrator_queue
                       (id, instance_id, work_item, visible_at, created_at, taskhub_priority,
                        taskhub_labels, taskhub_orchestration, taskhub_rank)
                VALUES (v_id, v_target, v_text, v_visible, v_now_ts, v_to_priority, v_to_labels,
                        coalesce(__SCHEMA__.taskhub_orchestration_name_of(v_element),
                                 CASE WHEN v_target = v_instance THEN v_self_name END),
                        __SCHEMA__.taskhub_rank_of(v_visible, v_to_priority, v_aging_ms));
                -- Timers that fire later wake nobody: the poll finds them.
                v_wakes := v_wakes OR coalesce(v_fire_at_ms, 0) <= v_now_ms;
            END LOOP;
        ELSE
            -- plain PostgreSQL only: one INSERT ... SELECT for the whole array (on a
            -- server that runs Citus, the loop).
            INSERT INTO __SCHEMA__.orchestrator_queue
                   (instance_id, work_item, visible_at, created_at, taskhub_priority,
                    taskhub_labels, taskhub_orchestration, taskhub_rank)
            -- The steering of the instance each is for: this turn's for its
            -- own messages and for a sub-orchestration it starts, the
            -- instance's own for the others (read only for those).
            -- The orchestration's name where it is known here: a start names
            -- its own, and this instance's own messages have this turn's.
            SELECT m.target, m.item, m.visible, v_now_ts, m.priority, m.labels,
                   coalesce(__SCHEMA__.taskhub_orchestration_name_of(m.o),
                            CASE WHEN m.target = v_instance THEN v_self_name END),
                   __SCHEMA__.taskhub_rank_of(m.visible, m.priority, v_aging_ms)
              FROM (SELECT e.o, e.target, e.item, e.visible, e.pos,
                           CASE WHEN e.target = v_instance OR e.o ? 'StartOrchestration'
                                THEN v_priority
                                ELSE (SELECT nullif(l.priority, 0)
                                        FROM __SCHEMA__.taskhub_instance_labels AS l
                                       WHERE l.instance_id = e.target) END AS priority,
                           CASE WHEN e.target = v_instance OR e.o ? 'StartOrchestration'
                                THEN v_labels
                                ELSE (SELECT nullif(l.labels, '{}')
                                        FROM __SCHEMA__.taskhub_instance_labels AS l
                                       WHERE l.instance_id = e.target) END AS labels
                      FROM (SELECT o, pos,
                                   coalesce(__SCHEMA__.taskhub_target_instance(o), v_instance)
                                       AS target,
                                   -- Every level of a jsonb value takes at least 8 bytes.
                                   CASE WHEN pg_column_size(o) >= 8 * __SCHEMA__.taskhub_max_json_depth()
                                        THEN __SCHEMA__.taskhub_storable_json(o::text,
                                                                              'an orchestrator item')
                                        ELSE o::text END AS item,
                                   CASE WHEN (o -> 'TimerFired' ->> 'fire_at_ms')::bigint > 0
                                        THEN to_timestamp((o -> 'TimerFired' ->> 'fire_at_ms')::bigint
                                                          / 1000.0)
                                        ELSE v_now_ts END AS visible
                              FROM jsonb_array_elements(v_orch) WITH ORDINALITY AS item (o, pos)
                             WHERE CASE
                                       WHEN __TOO_LARGE(o)__
                                       THEN __SCHEMA__.taskhub_refuse_turn_element(1)
                                       WHEN __NOT_AN_ORCHESTRATOR_ITEM(o)__
                                       THEN __SCHEMA__.taskhub_refuse_turn_element(4)
                                       ELSE true
                                   END) AS e) AS m
             ORDER BY m.pos;
            v_wakes := EXISTS (SELECT 1 FROM jsonb_array_elements(v_orch) AS o
                                WHERE coalesce((o -> 'TimerFired' ->> 'fire_at_ms')::bigint, 0)
                                      <= v_now_ms);
        END IF;
        -- A sub-orchestration of a steered turn is steered as it is
        -- (a row written by an earlier start of its id stays).
        IF v_priority IS NOT NULL OR v_labels IS NOT NULL THEN
            FOR v_target IN
                SELECT DISTINCT __SCHEMA__.taskhub_target_instance(o)
                  FROM jsonb_array_elements(v_orch) AS o
                 WHERE o ? 'StartOrchestration'
                   AND __SCHEMA__.taskhub_target_instance(o) <> v_instance
            LOOP
                INSERT INTO __SCHEMA__.taskhub_instance_labels AS l
                       (instance_id, priority, labels, started_at)
                VALUES (v_target, coalesce(v_priority, 0), coalesce(v_labels, '{}'), v_now_ts)
                ON CONFLICT (instance_id) DO NOTHING;
            END LOOP;
        END IF;
        IF v_wakes THEN
            SELECT true INTO v_listener_waits
              FROM __SCHEMA__.taskhub_wakeup_listeners AS l
             WHERE l.queue = 'orchestrator' AND l.waiting
             LIMIT 1;
            IF FOUND THEN
                PERFORM __SCHEMA__.taskhub_wake('orchestrator');
            END IF;
        END IF;
    END IF;

    -- The turn's own messages are consumed (messages that arrived during the
    -- turn carry no token and stay for the next one), and the lease ends.
    DELETE FROM __SCHEMA__.orchestrator_queue AS q
     WHERE q.instance_id = v_instance AND q.lock_token = p_lock_token;
    DELETE FROM __SCHEMA__.instance_locks AS il
     WHERE il.instance_id = v_instance
       AND il.lock_token = p_lock_token;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.ack_orchestration_item(text, bigint, bigint, jsonb, jsonb, jsonb, jsonb, jsonb) FROM PUBLIC;
