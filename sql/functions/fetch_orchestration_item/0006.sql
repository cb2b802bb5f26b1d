-- Lease one orchestration instance with all of its visible messages.
--
-- The guarantees, and how they are kept:
--   * It never waits for another fetcher. Candidates are claimed with
--     pg_try_advisory_xact_lock on a schema-scoped 64-bit key, and every row
--     lock is taken with SKIP LOCKED: a contended candidate is skipped.
--   * Concurrent dispatchers spread over instances. The oldest candidate is
--     tried first (so an idle hub is served oldest-first); when it is taken,
--     the others are tried from a random starting point.
--   * The lease is the last thing computed. The instance is held by the
--     advisory lock and its messages by row locks while the turn is read
--     (messages, history, KV, metadata, JSON parsing); only then is the clock
--     read and the lease written. The caller receives the whole timeout less
--     the time to send the row, however long the history took to read.
--   * It is bounded: one scan picks at most c_max_candidates instances; after
--     trying them it returns no row. And no message loops forever: one handed
--     out dead_letter_after_attempts times without an ack is moved to
--     dead_letters instead (see taskhub_settings, taskhub_dead_letter_cap).
--
-- Plans are generic (planned once per session, not on every call), and
-- index-driven whatever the table statistics say: a plan made while a table
-- was nearly empty must not turn into a sequential scan once it is large.
--
-- Returns no row when nothing was leased.
CREATE OR REPLACE FUNCTION __SCHEMA__.fetch_orchestration_item(
    p_now_ms              bigint,
    p_lock_timeout_ms     bigint,
    p_min_version_packed  bigint DEFAULT NULL,
    p_max_version_packed  bigint DEFAULT NULL
)
RETURNS TABLE (
    out_instance_id           text,
    out_orchestration_name    text,
    out_orchestration_version text,
    out_execution_id          bigint,
    out_history               jsonb,
    out_messages              jsonb,
    out_lock_token            text,
    out_attempt_count         integer,
    out_kv_snapshot           jsonb
)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
    c_max_candidates constant integer := 8;
    c_scan_rows      constant integer := 16;   -- queue rows read to find the candidates
    v_filtered   boolean := p_min_version_packed IS NOT NULL OR p_max_version_packed IS NOT NULL;
    v_min        bigint  := coalesce(p_min_version_packed, 0);
    v_max        bigint  := coalesce(p_max_version_packed, 9223372036854775807);
    v_scan_ms    bigint;
    v_candidates text[];
    v_row        record;
    v_count      integer;
    v_offset     integer;
    v_instance   text;
    v_now_ms     bigint;
    v_now_ts     timestamptz;
    v_held_until bigint;
    v_visible    bigint;
    v_locked     bigint;
    v_live_ids   bigint[];
    v_buried_ids bigint[];
    v_cap        integer;
    v_messages_text text;
    v_attempts   integer;
    v_name       text;
    v_version    text;
    v_execution  bigint;
    v_known      boolean;
    v_history_text text;
    v_messages   jsonb;
    v_history    jsonb;
    v_kv         jsonb;
    v_token      text;
    v_locked_until bigint;
BEGIN
    IF p_lock_timeout_ms IS NULL OR p_lock_timeout_ms <= 0 THEN
        RAISE EXCEPTION 'p_lock_timeout_ms must be positive' USING ERRCODE = '22023';
    ELSIF v_min > v_max THEN
        RAISE EXCEPTION 'p_min_version_packed must not exceed p_max_version_packed'
            USING ERRCODE = '22023';
    END IF;

    -- 1. Candidates: the instances of the oldest visible messages that have no
    --    live lease (and, with a version range, whose current execution is
    --    pinned inside it). Nothing is locked; everything is re-checked under
    --    lock. The lease test is a per-row subquery, not a join, so the plan
    --    walks the (visible_at, id) index from the oldest message and stops
    --    after c_scan_rows rows instead of reading the whole queue.
    v_scan_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    v_candidates := '{}';
    FOR v_row IN
        SELECT q.instance_id
          FROM __SCHEMA__.orchestrator_queue AS q
         WHERE q.visible_at <= to_timestamp(v_scan_ms / 1000.0)
           AND (q.lock_token IS NULL OR q.locked_until <= v_scan_ms)
           AND coalesce((SELECT il.locked_until
                           FROM __SCHEMA__.instance_locks AS il
                          WHERE il.instance_id = q.instance_id), 0) <= v_scan_ms
           AND (NOT v_filtered OR NOT EXISTS (
                   SELECT 1
                     FROM __SCHEMA__.instances AS i
                     JOIN __SCHEMA__.executions AS e
                       ON e.instance_id = i.instance_id
                      AND e.execution_id = i.current_execution_id
                    WHERE i.instance_id = q.instance_id
                      AND e.duroxide_version_major IS NOT NULL
                      AND e.duroxide_version_major::bigint * 1000000
                          + coalesce(e.duroxide_version_minor, 0) * 1000
                          + coalesce(e.duroxide_version_patch, 0)
                          NOT BETWEEN v_min AND v_max))
         ORDER BY q.visible_at, q.id
         LIMIT c_scan_rows
    LOOP
        IF NOT v_row.instance_id = ANY (v_candidates) THEN
            v_candidates := v_candidates || v_row.instance_id;
            EXIT WHEN cardinality(v_candidates) >= c_max_candidates;
        END IF;
    END LOOP;

    v_count := coalesce(cardinality(v_candidates), 0);
    IF v_count = 0 THEN
        RETURN;
    END IF;

    -- The dead-letter cap, read once per call (dead_letter_after_attempts).
    v_cap := __SCHEMA__.taskhub_dead_letter_cap();

    -- 2. Try order: the oldest first, then the others from a random starting
    --    point, so that dispatchers who lost the oldest spread out.
    v_offset := floor(random() * greatest(v_count - 1, 1))::integer;

    FOR v_idx IN 1 .. v_count LOOP
        v_instance := v_candidates[CASE WHEN v_idx = 1 THEN 1
                                        ELSE 2 + (v_idx - 2 + v_offset) % (v_count - 1) END];

        -- Another fetcher is on this instance: skip it, never wait.
        CONTINUE WHEN NOT pg_try_advisory_xact_lock(
            __SCHEMA__.taskhub_instance_lock_key(v_instance));

        -- The clock of this claim's decisions (visibility, expiry), read now
        -- that the instance is ours. The lease gets a clock of its own, later.
        v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
        v_now_ts := to_timestamp(v_now_ms / 1000.0);

        -- A live lease (taken since the scan) keeps the instance. An expired
        -- lease row being changed by a late ack, renew or abandon is skipped
        -- rather than waited for.
        SELECT il.locked_until INTO v_held_until
          FROM __SCHEMA__.instance_locks AS il
         WHERE il.instance_id = v_instance;
        IF FOUND THEN
            CONTINUE WHEN v_held_until > v_now_ms;
            PERFORM 1
              FROM __SCHEMA__.instance_locks AS il
             WHERE il.instance_id = v_instance
               AND il.locked_until <= v_now_ms
               FOR UPDATE SKIP LOCKED;
            CONTINUE WHEN NOT FOUND;
        END IF;

        -- The current execution must still be inside the version range.
        IF v_filtered THEN
            CONTINUE WHEN EXISTS (
                SELECT 1
                  FROM __SCHEMA__.instances AS i
                  JOIN __SCHEMA__.executions AS e
                    ON e.instance_id = i.instance_id
                   AND e.execution_id = i.current_execution_id
                 WHERE i.instance_id = v_instance
                   AND e.duroxide_version_major IS NOT NULL
                   AND e.duroxide_version_major::bigint * 1000000
                       + coalesce(e.duroxide_version_minor, 0) * 1000
                       + coalesce(e.duroxide_version_patch, 0)
                       NOT BETWEEN v_min AND v_max);
        END IF;

        -- 3. Lock every visible, unleased message of the instance without
        --    waiting, and read them. A turn must see its messages in order,
        --    none skipped: if any visible message could not be locked, the
        --    instance is contended and skipped. Messages handed out v_cap
        --    times without an ack are set apart for dead_letters.
        SELECT (SELECT count(*)
                  FROM __SCHEMA__.orchestrator_queue AS v
                 WHERE v.instance_id = v_instance
                   AND v.visible_at <= v_now_ts
                   AND (v.lock_token IS NULL OR v.locked_until <= v_now_ms)),
               count(*),
               array_agg(m.id ORDER BY m.id) FILTER (WHERE m.attempt_count < v_cap),
               array_agg(m.id ORDER BY m.id) FILTER (WHERE m.attempt_count >= v_cap),
               '[' || string_agg(m.work_item, ',' ORDER BY m.id)
                          FILTER (WHERE m.attempt_count < v_cap) || ']',
               max(m.attempt_count) FILTER (WHERE m.attempt_count < v_cap)
          INTO v_visible, v_locked, v_live_ids, v_buried_ids, v_messages_text, v_attempts
          FROM (SELECT q.id, q.work_item, q.attempt_count
                  FROM __SCHEMA__.orchestrator_queue AS q
                 WHERE q.instance_id = v_instance
                   AND q.visible_at <= v_now_ts
                   AND (q.lock_token IS NULL OR q.locked_until <= v_now_ms)
                   FOR UPDATE OF q SKIP LOCKED) AS m;
        CONTINUE WHEN v_locked = 0 OR v_locked <> v_visible;

        IF v_buried_ids IS NOT NULL THEN
            PERFORM __SCHEMA__.taskhub_bury_orchestrator_messages(v_buried_ids, v_cap);
        END IF;
        CONTINUE WHEN v_live_ids IS NULL;

        -- 4. What the turn needs: instance metadata, the current execution's
        --    history (one parse, below) and the committed KV state.
        SELECT meta.name, meta.version, meta.execution, meta.known, hist.events, kv.snapshot
          INTO v_name, v_version, v_execution, v_known, v_history_text, v_kv
          FROM (SELECT i.orchestration_name AS name,
                       coalesce(i.orchestration_version, 'unknown') AS version,
                       coalesce(i.current_execution_id,
                                (SELECT max(e.execution_id) FROM __SCHEMA__.executions AS e
                                  WHERE e.instance_id = v_instance),
                                1) AS execution,
                       i.instance_id IS NOT NULL AS known
                  FROM (SELECT 1) AS one
                  LEFT JOIN __SCHEMA__.instances AS i ON i.instance_id = v_instance) AS meta,
               LATERAL (SELECT '[' || string_agg(h.event_data, ',' ORDER BY h.event_id) || ']'
                               AS events
                          FROM __SCHEMA__.history AS h
                         WHERE h.instance_id = v_instance
                           AND h.execution_id = meta.execution) AS hist,
               LATERAL (SELECT coalesce(jsonb_object_agg(s.key, jsonb_build_object(
                                   'value', s.value,
                                   'last_updated_at_ms', s.last_updated_at_ms)), '{}'::jsonb)
                               AS snapshot
                          FROM __SCHEMA__.kv_store AS s
                         WHERE s.instance_id = v_instance) AS kv;

        -- One parse of the messages and one of the history. A message or
        -- event that is not valid JSON is passed on as a JSON string, so the
        -- runtime sees it (and can poison it) instead of the whole fetch
        -- failing forever on one bad row.
        BEGIN
            v_messages := v_messages_text::jsonb;
            v_history := coalesce(v_history_text, '[]')::jsonb;
        EXCEPTION WHEN invalid_text_representation THEN
            SELECT jsonb_agg(coalesce(__SCHEMA__.taskhub_try_jsonb(q.work_item),
                                      to_jsonb(q.work_item)) ORDER BY q.id)
              INTO v_messages
              FROM __SCHEMA__.orchestrator_queue AS q
             WHERE q.id = ANY (v_live_ids);
            SELECT coalesce(jsonb_agg(coalesce(__SCHEMA__.taskhub_try_jsonb(h.event_data),
                                               to_jsonb(h.event_data)) ORDER BY h.event_id),
                            '[]'::jsonb)
              INTO v_history
              FROM __SCHEMA__.history AS h
             WHERE h.instance_id = v_instance
               AND h.execution_id = v_execution;
        END;

        IF NOT v_known THEN
            -- First turn (or metadata never written): the start message names
            -- the orchestration, else the execution's OrchestrationStarted event.
            SELECT coalesce(m -> k ->> 'orchestration', 'Unknown'),
                   coalesce(m -> k ->> 'version', 'unknown')
              INTO v_name, v_version
              FROM jsonb_array_elements(v_messages) WITH ORDINALITY AS msg (m, pos),
                   LATERAL (SELECT __SCHEMA__.taskhub_work_item_kind(m) AS k) AS kind
             WHERE k IN ('StartOrchestration', 'ContinueAsNew')
             ORDER BY pos
             LIMIT 1;
            IF NOT FOUND THEN
                SELECT coalesce(ev ->> 'name', 'Unknown'), coalesce(ev ->> 'version', 'unknown')
                  INTO v_name, v_version
                  FROM jsonb_array_elements(v_history) AS ev
                 WHERE ev ->> 'type' = 'OrchestrationStarted'
                 LIMIT 1;
                IF NOT FOUND THEN
                    v_name := 'Unknown';
                    v_version := 'unknown';
                END IF;
            END IF;
        END IF;

        -- 5. Everything the caller receives is assembled: now the lease, from
        --    a clock read after all of it.
        v_token := 'lock_' || gen_random_uuid();
        v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
        v_locked_until := v_now_ms + p_lock_timeout_ms;
        INSERT INTO __SCHEMA__.instance_locks AS il (instance_id, lock_token, locked_until, locked_at)
        VALUES (v_instance, v_token, v_locked_until, v_now_ms)
        ON CONFLICT (instance_id) DO UPDATE
           SET lock_token   = EXCLUDED.lock_token,
               locked_until = EXCLUDED.locked_until,
               locked_at    = EXCLUDED.locked_at;
        UPDATE __SCHEMA__.orchestrator_queue AS q
           SET lock_token    = v_token,
               locked_until  = v_locked_until,
               attempt_count = q.attempt_count + 1
         WHERE q.id = ANY (v_live_ids);

        out_instance_id := v_instance;
        out_orchestration_name := v_name;
        out_orchestration_version := v_version;
        out_execution_id := v_execution;
        out_history := v_history;
        out_messages := v_messages;
        out_lock_token := v_token;
        out_attempt_count := v_attempts + 1;
        out_kv_snapshot := v_kv;
        RETURN NEXT;
        RETURN;
    END LOOP;

    RETURN;   -- every candidate was contended
END;
$$;

