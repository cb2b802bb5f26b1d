-- Complete a worker item: delete it and, when p_completion_json is given, put
-- the completion (ActivityCompleted / ActivityFailed) on the orchestrator
-- queue of p_instance_id, in one transaction. A NULL completion is a
-- cancelled activity: the item is only deleted.
--
-- Refused with 'Worker queue item not found or already processed' (SQLSTATE
-- TH001) when the token holds no live lease: acked, expired, taken over, or
-- deleted by a cancellation.
CREATE FUNCTION __SCHEMA__.ack_worker(
    p_lock_token      text,
    p_instance_id     text   DEFAULT NULL,
    p_completion_json text   DEFAULT NULL,
    p_now_ms          bigint DEFAULT NULL
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
    v_completion jsonb;
    v_now_ms     bigint;
    v_now_ts     timestamptz;
    v_session    text;
    v_priority   smallint;
    v_labels     text[];
    v_orchestration text;
    v_rank       timestamptz;
    v_seen_until bigint;
    v_listener_waits boolean;
    v_item       bigint;
    -- On a Citus node, statements on one table only (docs/scale-out.md).
    v_one_table  boolean := current_setting('citus.version', true) IS NOT NULL;
    v_id         bigint;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        EXECUTE 'SELECT __SCHEMA__.ack_worker($1, $2, $3, $4)'
            USING p_lock_token, p_instance_id, p_completion_json, p_now_ms;
        RETURN;
    END IF;
    -- Bad input is refused before anything is written. One test passes a
    -- short, well-formed completion (json only validates, it builds
    -- nothing); anything else takes the checks one by one, in their order.
    IF p_lock_token IS NULL
       OR (p_completion_json IS NOT NULL
           AND (p_instance_id IS NULL OR p_instance_id = ''
                OR octet_length(p_completion_json) > __SCHEMA__.taskhub_max_payload_bytes()
                OR __SCHEMA__.taskhub_json_openers(p_completion_json)
                   > __SCHEMA__.taskhub_max_json_depth()
                OR strpos(p_completion_json, '\u0000') > 0
                OR (coalesce(json_typeof(p_completion_json::json -> 'ActivityCompleted'), '')
                        <> 'object'
                    AND coalesce(json_typeof(p_completion_json::json -> 'ActivityFailed'), '')
                        <> 'object'))) THEN
        -- A \u0000 escape or nesting past taskhub_max_json_depth: refused as
        -- bad input (22023) like every other write (the exact check runs
        -- only for texts that could fail it). Not valid JSON: the cast
        -- refuses it (22P02).
        IF strpos(p_completion_json, '\u0000') > 0
           OR __SCHEMA__.taskhub_json_openers(p_completion_json)
              > __SCHEMA__.taskhub_max_json_depth() THEN
            PERFORM __SCHEMA__.taskhub_storable_json(p_completion_json, 'p_completion_json');
        END IF;
        v_completion := p_completion_json::jsonb;
        IF p_lock_token IS NULL THEN
            RAISE EXCEPTION 'p_lock_token must not be NULL' USING ERRCODE = '22023';
        ELSIF p_completion_json IS NOT NULL AND (p_instance_id IS NULL OR p_instance_id = '') THEN
            RAISE EXCEPTION 'p_instance_id is required when p_completion_json is provided'
                USING ERRCODE = '22023';
        ELSIF octet_length(p_completion_json) > __SCHEMA__.taskhub_max_payload_bytes() THEN
            RAISE EXCEPTION 'p_completion_json is larger than % bytes',
                __SCHEMA__.taskhub_max_payload_bytes() USING ERRCODE = '54000';
        ELSIF p_completion_json IS NOT NULL
              AND jsonb_typeof(v_completion -> 'ActivityCompleted') IS DISTINCT FROM 'object'
              AND jsonb_typeof(v_completion -> 'ActivityFailed') IS DISTINCT FROM 'object' THEN
            RAISE EXCEPTION 'p_completion_json must be an ActivityCompleted or ActivityFailed work item'
                USING ERRCODE = '22023';
        END IF;
    END IF;

    -- The item goes if its lease is live. A row whose lease expired fails the
    -- test on the statement's snapshot and is not waited for; one being
    -- changed (by its holder's renew, a fetcher taking it over, or a
    -- cancellation) is judged again on its new version after that commits.
    -- By the id the token names (taskhub_worker_item_of_token); a token
    -- from before 0021 by a read of the queue.
    v_item := __SCHEMA__.taskhub_worker_item_of_token(p_lock_token);
    IF v_item IS NULL THEN
        SELECT q.id INTO v_item FROM __SCHEMA__.worker_queue AS q WHERE q.lock_token = p_lock_token;
    END IF;
    v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    IF v_one_table THEN
        DELETE FROM __SCHEMA__.worker_queue AS q
         WHERE q.id = v_item
           AND q.lock_token = p_lock_token
           AND q.locked_until > v_now_ms
        RETURNING q.session_id, q.taskhub_priority, q.taskhub_labels,
                  CASE WHEN q.instance_id = p_instance_id THEN q.taskhub_orchestration END
             INTO v_session, v_priority, v_labels, v_orchestration;
    ELSE
        -- plain PostgreSQL only: whether a listener waits for the completion
        -- rides on the DELETE (an index probe; on a busy hub nobody waits).
        DELETE FROM __SCHEMA__.worker_queue AS q
         WHERE q.id = v_item
           AND q.lock_token = p_lock_token
           AND q.locked_until > v_now_ms
        RETURNING q.session_id, q.taskhub_priority, q.taskhub_labels,
                  CASE WHEN q.instance_id = p_instance_id THEN q.taskhub_orchestration END,
                  EXISTS (SELECT 1 FROM __SCHEMA__.taskhub_wakeup_listeners AS l
                           WHERE l.queue = 'orchestrator' AND l.waiting)
             INTO v_session, v_priority, v_labels, v_orchestration, v_listener_waits;
    END IF;
    IF NOT FOUND THEN
        SELECT q.locked_until INTO v_seen_until
          FROM __SCHEMA__.worker_queue AS q
         WHERE q.id = v_item AND q.lock_token = p_lock_token;
        RAISE EXCEPTION 'Worker queue item not found or already processed'
            USING ERRCODE = 'TH001',
                  DETAIL = __SCHEMA__.taskhub_lease_lost_detail(v_seen_until, v_now_ms);
    END IF;

    -- The completion, for the orchestration's next turn.
    IF p_completion_json IS NOT NULL THEN
        v_now_ts := to_timestamp(v_now_ms / 1000.0);
        -- The id is drawn first: no volatile call inside the INSERT.
        v_id := nextval('__SCHEMA__.orchestrator_queue_id_seq');
        -- With the item's steering (its instance's), when it has any, and
        -- its orchestration's name.
        IF v_priority > 0 THEN
            v_rank := __SCHEMA__.taskhub_rank_of(v_now_ts, v_priority,
                                                 __SCHEMA__.taskhub_priority_aging_ms());
        END IF;
        INSERT INTO __SCHEMA__.orchestrator_queue
               (id, instance_id, work_item, visible_at, created_at, taskhub_priority,
                taskhub_labels, taskhub_orchestration, taskhub_rank)
        VALUES (v_id, p_instance_id, p_completion_json, v_now_ts, v_now_ts, v_priority, v_labels,
                v_orchestration, v_rank);
        -- On Citus, whether a listener waits is a statement of its own: a
        -- subquery in the DELETE's RETURNING would cost the DELETE a
        -- distributed plan on every call.
        IF v_one_table THEN
            SELECT true INTO v_listener_waits
              FROM __SCHEMA__.taskhub_wakeup_listeners AS l
             WHERE l.queue = 'orchestrator' AND l.waiting
             LIMIT 1;
        END IF;
        IF v_listener_waits THEN
            PERFORM __SCHEMA__.taskhub_wake('orchestrator');
        END IF;
    END IF;

    IF v_session IS NOT NULL THEN
        PERFORM __SCHEMA__.taskhub_touch_session(v_session, v_now_ms);
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.ack_worker(text, text, text, bigint) FROM PUBLIC;
