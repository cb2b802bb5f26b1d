-- Lease the oldest visible worker item that this worker may run.
--
--   * Highest priority first, then oldest by when it became visible:
--     candidates walk taskhub_worker_rank_idx (the rank is visible_at less
--     the head start of the item's priority, taskhub_rank_of; without a
--     priority, visible_at) up to now, so work due later (an item given back
--     with a delay, a backlog scheduled ahead) costs a fetch nothing, bar
--     prioritized work due within its head start. (Up to 0020 they went by
--     id, and every fetch read past each such row queued before the visible
--     ones: 100,000 of them made a fetch take hundreds of milliseconds.)
--   * Tags: p_tag_mode 'default_only' (untagged items), 'tags' (tag in
--     p_tag_filter), 'default_and' (either), 'any', or 'none' (nothing).
--   * Sessions: without p_owner_id only items outside sessions are eligible.
--     With it, also items of sessions this owner holds, or that nobody holds
--     live; claiming such an item claims (or extends) the session for the owner.
--     The scan reads the queue alone; an item of a session held live by
--     another owner is found out under lock, and then every session held so
--     is read at once and left out of the next scans.
--   * Never waits: queue rows are taken with SKIP LOCKED and a session is
--     claimed with pg_try_advisory_xact_lock; a contended session is skipped
--     and the next eligible item is tried, up to c_max_candidates items.
--   * The leases are the last thing computed: the item's and the session's
--     end come from a clock read after the item is locked and the session
--     decided, right before they are written.
--   * An item handed out dead_letter_after_attempts times without an ack is
--     moved to dead_letters instead of being handed out again.
--   * Flow control (docs/flow-control.md): the rules' summary is read once
--     (taskhub_flow_summary, by its key). Items of a paused activity are left
--     out of the scans. An item of a limited activity is leased only with a
--     free slot of its limit (taskhub_flow_slots: max_running rows), claimed
--     for the item's lease under the key's advisory lock (taken without
--     waiting), and held as long as the item holds that lease; with none
--     free, or another fetch claiming, its activity is left out of the next
--     scans, like a contended session.
--   * Every statement reads or writes one table, with no subquery: on a hub
--     distributed by Citus each is planned on its node like a plain one
--     (docs/scale-out.md).
CREATE FUNCTION __SCHEMA__.fetch_work_item(
    p_now_ms                  bigint,
    p_lock_timeout_ms         bigint,
    p_owner_id                text   DEFAULT NULL,
    p_session_lock_timeout_ms bigint DEFAULT NULL,
    p_tag_filter              text[] DEFAULT NULL,
    p_tag_mode                text   DEFAULT 'default_only'
)
RETURNS TABLE (out_work_item text, out_lock_token text, out_attempt_count integer)
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
    c_max_candidates constant integer := 8;
    v_mode          text    := coalesce(p_tag_mode, 'default_only');
    v_scan_ms       bigint;
    v_now_ms        bigint;
    v_id            bigint;
    v_session       text;
    v_skip_sessions text[]  := '{}';
    v_owner         text;
    v_owner_until   bigint;
    v_session_row   boolean;
    v_attempts      integer;
    v_cap           integer;
    v_token         text;
    v_foreign       text[];
    v_foreign_read  boolean := false;
    v_skip_names    text[];   -- paused, or found at their limit in this call
    v_limited       text[];   -- activities with a limit (and not paused)
    v_limits        integer[];  -- their max_running, in the same order
    v_rated         text[];   -- activities with a rate limit (and not paused)
    v_limit         integer;
    v_server_ms     bigint;   -- the server's clock alone, for the slots and tokens
    v_name          text;
    v_slot          integer;  -- the slot claimed for this item, if limited
    v_slots         integer[];
    v_tokens        text[];
    v_holders       bigint[];
    v_live          text[];
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.fetch_work_item($1, $2, $3, $4, $5, $6)'
            USING p_now_ms, p_lock_timeout_ms, p_owner_id, p_session_lock_timeout_ms, p_tag_filter,
                  p_tag_mode;
        RETURN;
    END IF;
    -- The arguments, in one test; the checks one by one only to say which
    -- is wrong.
    IF p_lock_timeout_ms IS NULL OR p_lock_timeout_ms <= 0 OR p_session_lock_timeout_ms <= 0
       OR p_owner_id = '' OR v_mode NOT IN ('default_only', 'tags', 'default_and', 'any') THEN
        IF p_lock_timeout_ms IS NULL OR p_lock_timeout_ms <= 0 THEN
            RAISE EXCEPTION 'p_lock_timeout_ms must be positive' USING ERRCODE = '22023';
        ELSIF p_session_lock_timeout_ms <= 0 THEN
            RAISE EXCEPTION 'p_session_lock_timeout_ms must be NULL or positive'
                USING ERRCODE = '22023';
        ELSIF p_owner_id = '' THEN
            RAISE EXCEPTION 'p_owner_id must be NULL or non-empty' USING ERRCODE = '22023';
        ELSIF v_mode = 'none' THEN
            RETURN;
        END IF;
        RAISE EXCEPTION 'p_tag_mode must be one of default_only, tags, default_and, any, none (got %)',
            quote_literal(p_tag_mode) USING ERRCODE = '22023';
    END IF;

    -- The rules (on a hub without any: one probe of an empty index).
    SELECT f.paused, nullif(f.limited, '{}'), f.limits, nullif(f.rated, '{}')
      INTO v_skip_names, v_limited, v_limits, v_rated
      FROM __SCHEMA__.taskhub_flow_summary AS f
     WHERE f.kind = 'activity';
    v_skip_names := coalesce(v_skip_names, '{}');

    -- An activity found at its limit or out of tokens takes one attempt and
    -- is left out of the next scans: the bound grows by one a rule, so that
    -- full activities cannot use up the attempts of those behind them.
    FOR v_attempt IN 1 .. c_max_candidates + coalesce(cardinality(v_limited), 0)
                                           + coalesce(cardinality(v_rated), 0) LOOP
        v_scan_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);

        SELECT q.id, q.session_id, q.attempt_count, q.taskhub_activity_name
          INTO v_id, v_session, v_attempts, v_name
          FROM __SCHEMA__.worker_queue AS q
         WHERE coalesce(q.taskhub_rank, q.visible_at) <= to_timestamp(v_scan_ms / 1000.0)
           -- Due: a test no index serves, so that the rank's index alone
           -- can drive the scan, whatever the statistics.
           AND CASE WHEN q.visible_at <= to_timestamp(v_scan_ms / 1000.0) THEN true
                    ELSE false END
           AND (q.lock_token IS NULL OR q.locked_until <= v_scan_ms)
           AND CASE WHEN q.tag IS NULL THEN v_mode <> 'tags'
                    ELSE v_mode <> 'default_only' AND (v_mode = 'any' OR q.tag = ANY (p_tag_filter))
               END
           AND (q.session_id IS NULL
                OR (p_owner_id IS NOT NULL AND NOT q.session_id = ANY (v_skip_sessions)))
           -- A row without the column (written otherwise) is read for its name.
           AND (cardinality(v_skip_names) = 0
                OR NOT coalesce(q.taskhub_activity_name,
                                __SCHEMA__.taskhub_activity_name_of(q.work_item), '')
                       = ANY (v_skip_names))
         ORDER BY coalesce(q.taskhub_rank, q.visible_at), q.id
         LIMIT 1
           FOR UPDATE OF q SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;

        -- Handed out too often without an ack: to dead_letters, never again.
        -- (The setting is only read for items fetched before.)
        IF v_attempts > 0 THEN
            v_cap := __SCHEMA__.taskhub_dead_letter_cap();
            IF v_attempts >= v_cap THEN
                PERFORM __SCHEMA__.taskhub_bury_work_item(v_id, v_cap);
                CONTINUE;
            END IF;
        END IF;

        IF v_session IS NOT NULL THEN
            -- Claim the session without waiting: another fetcher claiming it
            -- right now, or a session row busy elsewhere, means try another item.
            IF NOT pg_try_advisory_xact_lock(__SCHEMA__.taskhub_session_lock_key(v_session)) THEN
                v_skip_sessions := v_skip_sessions || v_session;
                CONTINUE;
            END IF;
            v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
            SELECT s.worker_id, s.locked_until INTO v_owner, v_owner_until
              FROM __SCHEMA__.sessions AS s
             WHERE s.session_id = v_session
               FOR UPDATE SKIP LOCKED;
            v_session_row := FOUND;
            IF v_session_row AND v_owner <> p_owner_id AND v_owner_until > v_now_ms THEN
                -- Held live by another owner. The first time, every session
                -- held so is read at once and left out of the next scans, so
                -- that items of sessions held elsewhere cannot use up the
                -- attempts while an eligible item waits behind them.
                IF NOT v_foreign_read THEN
                    SELECT coalesce(array_agg(s.session_id), '{}') INTO v_foreign
                      FROM __SCHEMA__.sessions AS s
                     WHERE s.locked_until > v_now_ms
                       AND s.worker_id <> p_owner_id;
                    v_skip_sessions := v_skip_sessions || v_foreign;
                    v_foreign_read := true;
                END IF;
                v_skip_sessions := v_skip_sessions || v_session;
                CONTINUE;
            ELSIF NOT v_session_row THEN
                -- A session row another call is changing: skip the session.
                PERFORM 1 FROM __SCHEMA__.sessions AS s WHERE s.session_id = v_session;
                IF FOUND THEN
                    v_skip_sessions := v_skip_sessions || v_session;
                    CONTINUE;
                END IF;
            END IF;
        END IF;

        -- The leases, from a clock read now that everything is decided.
        -- The token names the item (taskhub_worker_item_of_token).
        v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
        v_token := 'lock_' || v_id || '_' || gen_random_uuid();

        -- A limited activity: a free slot for this lease too, and a rated one
        -- a token, else the next item. A slot is free when the item and
        -- lease written in it are not held any more (acked, abandoned, ended
        -- unrenewed).
        IF v_limited IS NOT NULL OR v_rated IS NOT NULL THEN
            IF v_name IS NULL THEN
                SELECT __SCHEMA__.taskhub_activity_name_of(q.work_item) INTO v_name
                  FROM __SCHEMA__.worker_queue AS q
                 WHERE q.id = v_id;
            END IF;
            -- One fetch at a time claims the key's slots and takes its
            -- tokens: the others skip it for this call, never waiting. Read
            -- after the lock, the slots and their holders' leases are as the
            -- last claim left them.
            IF (v_name = ANY (v_limited) OR v_name = ANY (v_rated))
               AND NOT pg_try_advisory_xact_lock(
                           __SCHEMA__.taskhub_flow_lock_key('activity', v_name)) THEN
                v_skip_names := v_skip_names || v_name;
                CONTINUE;
            END IF;
            -- Whether a holder's lease is live, and the tokens, go by the
            -- server's clock: a caller's clock ahead of it (up to
            -- taskhub_max_clock_skew_ms) frees no held slot, refills no bucket.
            v_server_ms := __SCHEMA__.taskhub_clock_ms(NULL);
            v_limit := v_limits[array_position(v_limited, v_name)];
            IF v_limit IS NOT NULL THEN
                v_slot := NULL;
                IF current_setting('citus.version', true) IS NOT NULL THEN
                    -- One table a statement: the slots, then the leases
                    -- still held among their holders.
                    SELECT array_agg(f.slot ORDER BY f.slot),
                           array_agg(f.lock_token ORDER BY f.slot),
                           array_agg(f.item_id ORDER BY f.slot)
                      INTO v_slots, v_tokens, v_holders
                      FROM __SCHEMA__.taskhub_flow_slots AS f
                     WHERE f.kind = 'activity' AND f.name = v_name;
                    SELECT coalesce(array_agg(q.lock_token), '{}') INTO v_live
                      FROM __SCHEMA__.worker_queue AS q
                     WHERE q.id = ANY (v_holders) AND q.lock_token = ANY (v_tokens)
                       AND q.locked_until > v_server_ms;
                    FOR v_n IN 1 .. coalesce(cardinality(v_slots), 0) LOOP
                        EXIT WHEN cardinality(v_live) >= v_limit;
                        IF v_tokens[v_n] IS NULL OR NOT v_tokens[v_n] = ANY (v_live) THEN
                            v_slot := v_slots[v_n];
                            EXIT;
                        END IF;
                    END LOOP;
                    UPDATE __SCHEMA__.taskhub_flow_slots AS s
                       SET item_id = v_id, lock_token = v_token
                     WHERE s.kind = 'activity' AND s.name = v_name AND s.slot = v_slot;
                ELSE
                    -- plain PostgreSQL only: a free slot among the first
                    -- max_running, claimed in one statement (on a server
                    -- that runs Citus, the three above). A slot held beyond
                    -- them (left by a lowered limit, until its lease ends)
                    -- takes one of them: with L such, the (L+1)th free one is
                    -- claimed, so no more than the limit are ever held. The
                    -- walk stops at that slot: its cost follows the leases
                    -- held, not the limit (a limit of 10,000 with one lease
                    -- held reads two slots, not 10,000).
                    UPDATE __SCHEMA__.taskhub_flow_slots AS s
                       SET item_id = v_id, lock_token = v_token
                     WHERE s.kind = 'activity' AND s.name = v_name
                       AND s.slot = (SELECT f.slot
                                       FROM __SCHEMA__.taskhub_flow_slots AS f
                                       LEFT JOIN __SCHEMA__.worker_queue AS q
                                              ON q.id = f.item_id
                                             AND q.lock_token = f.lock_token
                                             AND q.locked_until > v_server_ms
                                      WHERE f.kind = 'activity' AND f.name = v_name
                                        AND f.slot <= v_limit
                                        AND q.id IS NULL
                                      ORDER BY f.slot
                                     OFFSET (SELECT count(*)
                                               FROM __SCHEMA__.taskhub_flow_slots AS f
                                               JOIN __SCHEMA__.worker_queue AS q
                                                 ON q.id = f.item_id
                                                AND q.lock_token = f.lock_token
                                                AND q.locked_until > v_server_ms
                                              WHERE f.kind = 'activity' AND f.name = v_name
                                                AND f.slot > v_limit)
                                      LIMIT 1)
                    RETURNING s.slot INTO v_slot;
                END IF;
                IF v_slot IS NULL THEN
                    v_skip_names := v_skip_names || v_name;
                    CONTINUE;
                END IF;
            END IF;
            IF v_name = ANY (v_rated) THEN
                -- A token, refilled for the time since the last one was taken.
                -- None: skip (a slot claimed above frees itself: the lease
                -- written in it is never the item's).
                UPDATE __SCHEMA__.taskhub_flow_buckets AS b
                   SET tokens = least(b.burst, b.tokens
                                               + greatest(0, v_server_ms - b.refilled_at_ms)
                                                 * b.per_second / 1000.0) - 1,
                       refilled_at_ms = greatest(b.refilled_at_ms, v_server_ms)
                 WHERE b.kind = 'activity' AND b.name = v_name
                   AND least(b.burst, b.tokens
                                      + greatest(0, v_server_ms - b.refilled_at_ms)
                                        * b.per_second / 1000.0) >= 1;
                IF NOT FOUND THEN
                    v_skip_names := v_skip_names || v_name;
                    CONTINUE;
                END IF;
            END IF;
        END IF;
        IF v_session IS NOT NULL THEN
            IF v_session_row THEN
                UPDATE __SCHEMA__.sessions AS s
                   SET worker_id        = p_owner_id,
                       locked_until     = v_now_ms
                                          + coalesce(p_session_lock_timeout_ms, p_lock_timeout_ms),
                       last_activity_at = v_now_ms
                 WHERE s.session_id = v_session;
            ELSE
                INSERT INTO __SCHEMA__.sessions (session_id, worker_id, locked_until, last_activity_at)
                VALUES (v_session, p_owner_id,
                        v_now_ms + coalesce(p_session_lock_timeout_ms, p_lock_timeout_ms), v_now_ms);
            END IF;
        END IF;
        UPDATE __SCHEMA__.worker_queue AS q
           SET lock_token    = v_token,
               locked_until  = v_now_ms + p_lock_timeout_ms,
               attempt_count = q.attempt_count + 1
         WHERE q.id = v_id
        RETURNING q.work_item, q.lock_token, q.attempt_count
             INTO out_work_item, out_lock_token, out_attempt_count;
        RETURN NEXT;
        RETURN;
    END LOOP;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.fetch_work_item(bigint, bigint, text, bigint, text[], text) FROM PUBLIC;
