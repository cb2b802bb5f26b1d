-- Start orchestrations, each once, all or none, with their steering: the
-- application client's start and start_many. p_work_items[i] is the
-- StartOrchestration of p_instance_ids[i], and p_steering[i] (a JSON array
-- aligned with them, or NULL) its priority and labels: null, or
-- {"priority": 0-9, "labels": ["key=value", ...]}, checked by
-- taskhub_check_steering (docs/flow-control.md). One row per start, in the
-- order given:
--   out_started true:  queued by this call;
--   out_started false: the instance exists, or its start is queued, with the
--                      same orchestration and input: nothing written.
-- A start of an instance that exists with another orchestration, another
-- input, another explicit version or other steering refuses the whole call
-- (23505), and so does a malformed item or steering (22023): nothing of it
-- is written.
--
-- A start of one instance serializes with other starts of that id only (its
-- stripe held shared, its id exclusively), as taskhub_start_orchestration
-- does; a batch holds each stripe of its ids exclusively, taken in order, so
-- that two batches never deadlock and a batch takes at most 1024 locks
-- (taskhub_start_stripe_key). Locks are held to the commit: the caller's own
-- transaction (an outbox) sees and is seen by every other start.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_start_steered_orchestrations(
    p_instance_ids text[],
    p_work_items   text[],
    p_visible_at   timestamptz,
    p_traceparent  text,
    p_tracestate   text,
    p_steering     jsonb
)
RETURNS TABLE (out_instance_id text, out_started boolean)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_max_starts constant integer := 100000;
    v_count    integer := coalesce(cardinality(p_instance_ids), 0);
    v_stripe   bigint;
    v_start    jsonb;
    v_existing record;
    v_differs  text[];
    v_steer    jsonb;
    v_priority integer;
    v_labels   text[];
    v_held     record;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE
            'SELECT * FROM __SCHEMA__.taskhub_start_steered_orchestrations($1, $2, $3, $4, $5, $6)'
            USING p_instance_ids, p_work_items, p_visible_at, p_traceparent, p_tracestate,
                  p_steering;
        RETURN;
    END IF;
    IF v_count <> coalesce(cardinality(p_work_items), 0) THEN
        RAISE EXCEPTION 'p_instance_ids and p_work_items must have the same length'
            USING ERRCODE = '22023';
    ELSIF v_count > c_max_starts THEN
        RAISE EXCEPTION 'at most % starts in one call, got %', c_max_starts, v_count
            USING ERRCODE = '22023';
    ELSIF p_steering IS NOT NULL
          AND (jsonb_typeof(p_steering) <> 'array' OR jsonb_array_length(p_steering) <> v_count) THEN
        RAISE EXCEPTION 'p_steering must be NULL or a JSON array of one entry per start'
            USING ERRCODE = '22023';
    ELSIF p_tracestate IS NOT NULL AND p_traceparent IS NULL THEN
        RAISE EXCEPTION 'p_tracestate needs p_traceparent' USING ERRCODE = '22023';
    ELSIF v_count = 0 THEN
        RETURN;
    END IF;

    IF v_count = 1 THEN
        PERFORM pg_advisory_xact_lock_shared(
            __SCHEMA__.taskhub_start_stripe_key(coalesce(p_instance_ids[1], '')));
        PERFORM pg_advisory_xact_lock(
            hashtextextended('taskhub:__SCHEMA__:start:' || coalesce(p_instance_ids[1], ''), 0));
    ELSE
        FOR v_stripe IN
            SELECT DISTINCT __SCHEMA__.taskhub_start_stripe_key(coalesce(id, ''))
              FROM unnest(p_instance_ids) AS ids (id)
             ORDER BY 1
        LOOP
            PERFORM pg_advisory_xact_lock(v_stripe);
        END LOOP;
    END IF;

    FOR i IN 1 .. v_count LOOP
        out_instance_id := p_instance_ids[i];
        v_start := __SCHEMA__.taskhub_try_jsonb(p_work_items[i]);
        IF __SCHEMA__.taskhub_work_item_kind(v_start) IS DISTINCT FROM 'StartOrchestration'
           OR v_start -> 'StartOrchestration' ->> 'instance' IS DISTINCT FROM out_instance_id THEN
            RAISE EXCEPTION 'start % of %: p_work_items[%] must be the StartOrchestration of %',
                            i, v_count, i, coalesce(out_instance_id, 'NULL')
                USING ERRCODE = '22023';
        END IF;
        v_start := v_start -> 'StartOrchestration';
        -- The steering asked for: priority 0 and no labels when none is.
        v_steer := CASE WHEN jsonb_typeof(p_steering -> (i - 1)) = 'object'
                        THEN p_steering -> (i - 1) END;
        IF p_steering IS NOT NULL AND v_steer IS NULL
           AND jsonb_typeof(p_steering -> (i - 1)) <> 'null' THEN
            RAISE EXCEPTION 'start % of %: p_steering[%] must be null or an object', i, v_count, i
                USING ERRCODE = '22023';
        END IF;
        IF v_steer IS NOT NULL
           AND (v_steer - 'priority' - 'labels' <> '{}'
                OR jsonb_typeof(v_steer -> 'priority') NOT IN ('number', 'null')
                OR jsonb_typeof(v_steer -> 'labels') NOT IN ('array', 'null')
                OR jsonb_path_exists(v_steer, '$.labels[*] ? (@.type() != "string")')
                OR (jsonb_typeof(v_steer -> 'priority') = 'number'
                    AND (v_steer ->> 'priority') !~ '^-?[0-9]{1,9}$')) THEN
            RAISE EXCEPTION 'start % of %: p_steering[%] takes "priority" (a whole number) and '
                            '"labels" (an array of texts) only', i, v_count, i
                USING ERRCODE = '22023';
        END IF;
        v_priority := (v_steer ->> 'priority')::integer;  -- at most 9 digits
        v_labels := __SCHEMA__.taskhub_check_steering(
            v_priority, ARRAY(SELECT jsonb_array_elements_text(v_steer -> 'labels')));
        v_priority := coalesce(v_priority, 0);

        SELECT * INTO v_existing FROM __SCHEMA__.taskhub_existing_start(out_instance_id);
        IF FOUND THEN
            v_differs := '{}';
            IF v_existing.out_orchestration IS DISTINCT FROM v_start ->> 'orchestration' THEN
                v_differs := v_differs || format('orchestration %s, not %s',
                    v_existing.out_orchestration, v_start ->> 'orchestration');
            END IF;
            IF v_start ->> 'version' IS NOT NULL AND v_existing.out_version IS NOT NULL
               AND v_start ->> 'version' <> v_existing.out_version THEN
                v_differs := v_differs || format('version %s, not %s',
                    v_existing.out_version, v_start ->> 'version');
            END IF;
            -- Inputs compared as JSON values (key order and spacing aside).
            IF v_existing.out_input IS NOT NULL
               AND coalesce(__SCHEMA__.taskhub_try_jsonb(v_existing.out_input)
                                = __SCHEMA__.taskhub_try_jsonb(v_start ->> 'input'),
                            v_existing.out_input = v_start ->> 'input') IS NOT TRUE THEN
                v_differs := v_differs || 'another input'::text;
            END IF;
            -- The steering too (none asked: priority 0, no labels).
            SELECT l.priority, l.labels INTO v_held
              FROM __SCHEMA__.taskhub_instance_labels AS l
             WHERE l.instance_id = out_instance_id;
            IF coalesce(v_held.priority, 0) <> v_priority
               OR coalesce(v_held.labels, '{}') <> v_labels THEN
                v_differs := v_differs || 'other priority or labels'::text;
            END IF;
            IF cardinality(v_differs) > 0 THEN
                RAISE EXCEPTION 'instance % already exists with %: a repeated start must be the same',
                                out_instance_id, array_to_string(v_differs, ' and ')
                    USING ERRCODE = '23505';
            END IF;
            out_started := false;
            RETURN NEXT;
            CONTINUE;
        END IF;

        -- The steering first: the enqueue reads it for the message. A row
        -- left by a deleted instance of the same id goes.
        IF v_priority > 0 OR cardinality(v_labels) > 0 THEN
            INSERT INTO __SCHEMA__.taskhub_instance_labels AS l
                   (instance_id, priority, labels, started_at)
            VALUES (out_instance_id, v_priority, v_labels, clock_timestamp())
            ON CONFLICT (instance_id) DO UPDATE
               SET priority = EXCLUDED.priority, labels = EXCLUDED.labels,
                   started_at = EXCLUDED.started_at;
        ELSE
            DELETE FROM __SCHEMA__.taskhub_instance_labels AS l
             WHERE l.instance_id = out_instance_id;
        END IF;
        -- Every check of the message (ids, sizes, nesting) is the enqueue's own.
        IF p_traceparent IS NULL THEN
            PERFORM __SCHEMA__.enqueue_orchestrator_work(
                out_instance_id, p_work_items[i], p_visible_at);
        ELSE
            PERFORM __SCHEMA__.taskhub_enqueue_traced_orchestrator_work(
                out_instance_id, p_work_items[i], p_visible_at, p_traceparent, p_tracestate);
        END IF;
        out_started := true;
        RETURN NEXT;
    END LOOP;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_start_steered_orchestrations(text[], text[], timestamp with time zone, text, text, jsonb) FROM PUBLIC;
