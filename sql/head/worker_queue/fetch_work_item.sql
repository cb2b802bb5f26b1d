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
--     (taskhub_flow_summary, by its key). Items of a paused activity or
--     label are left out of the scans. An item of a limited key (its
--     activity, one of its labels, or a label limited value by value) is
--     leased only with a free slot of each such limit (taskhub_flow_slots:
--     max_running rows a key), claimed for the item's lease under the key's
--     advisory lock (taken without waiting), and held as long as the item
--     holds that lease; with none free, or another fetch claiming, the
--     activity or label is left out of the next scans, like a contended
--     session.
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
    v_skip_names    text[];   -- activities paused, or found full in this call
    v_skip_labels   text[];   -- labels ('key=value') paused, or found full
    v_limited       text[];   -- keys with a limit, not paused: kind:name
    v_limits        integer[];  -- their max_running, in the same order
    v_rated         text[];   -- keys with a rate limit, not paused: kind:name
    v_item_labels   text[];
    v_label         text;
    v_keys          text[];   -- the candidate's limited or rated keys
    v_key_limits    integer[];  -- their max_running (NULL: rated only)
    v_key_kind      text;
    v_key_name      text;
    v_each          integer;
    v_per_value     boolean := false;  -- a label is limited value by value
    v_made          integer;  -- the slot a value gets made
    v_after_rank    timestamptz := '-infinity';  -- where the last scan stopped
    v_after_id      bigint := 0;
    v_rank          timestamptz;
    v_beyond        bigint;   -- and those beyond its limit
    v_limit         integer;
    v_server_ms     bigint;   -- the server's clock alone, for the slots and tokens
    v_name          text;
    v_slot          integer;  -- the slot claimed for this item, if limited
    v_slots         integer[];
    v_tokens        text[];
    v_holders       bigint[];
    v_from          integer;  -- the slots read so far, by number
    v_read_slots    integer[];  -- the numbers of those that exist
    v_held_beyond   bigint;   -- slots beyond the limit still held
    v_live          text[];   -- the tokens of the leases still held among them
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
    SELECT f.paused, f.paused_labels, nullif(f.limited, '{}'), f.limits, nullif(f.rated, '{}')
      INTO v_skip_names, v_skip_labels, v_limited, v_limits, v_rated
      FROM __SCHEMA__.taskhub_flow_summary AS f
     WHERE f.kind = 'rules';
    v_skip_names := coalesce(v_skip_names, '{}');
    v_skip_labels := coalesce(v_skip_labels, '{}');
    IF v_limited IS NOT NULL THEN
        v_per_value := EXISTS (SELECT 1 FROM unnest(v_limited) AS k
                                WHERE left(k, 11) = 'label_each:');
    END IF;

    -- A key found at its limit or out of tokens takes one attempt and is
    -- left out of the next scans: the bound grows by one a rule (and by 256
    -- with a limit for each value of a label: a value each), so that full
    -- keys cannot use up the attempts of those behind them. Each scan goes
    -- on from where the last one stopped (what it passed over was tried or
    -- left out), so a call walks the queue once, however many it skips.
    <<attempts>>
    FOR v_attempt IN 1 .. c_max_candidates + coalesce(cardinality(v_limited), 0)
                                           + coalesce(cardinality(v_rated), 0)
                                           + CASE WHEN v_per_value THEN 256 ELSE 0 END LOOP
        v_scan_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);

        SELECT q.id, q.session_id, q.attempt_count, q.taskhub_activity_name, q.taskhub_labels,
               coalesce(q.taskhub_rank, q.visible_at)
          INTO v_id, v_session, v_attempts, v_name, v_item_labels, v_rank
          FROM __SCHEMA__.worker_queue AS q
         WHERE coalesce(q.taskhub_rank, q.visible_at) <= to_timestamp(v_scan_ms / 1000.0)
           AND (coalesce(q.taskhub_rank, q.visible_at), q.id + 0) > (v_after_rank, v_after_id)
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
           AND (cardinality(v_skip_labels) = 0
                OR NOT coalesce(q.taskhub_labels && v_skip_labels, false))
         ORDER BY coalesce(q.taskhub_rank, q.visible_at), q.id + 0
         LIMIT 1
           FOR UPDATE OF q SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        v_after_rank := v_rank;
        v_after_id := v_id;

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

        -- A limited key: a free slot for this lease too, and a rated one a
        -- token, else the next item. The item's keys: its activity, each of
        -- its labels, and each label whose key is limited value by value. A
        -- slot is free when the item and lease written in it are not held
        -- any more (acked, abandoned, ended unrenewed); one claimed here for
        -- an item that is then skipped frees itself (its lease is never the
        -- item's).
        IF v_limited IS NOT NULL OR v_rated IS NOT NULL THEN
            IF v_name IS NULL THEN
                SELECT __SCHEMA__.taskhub_activity_name_of(q.work_item) INTO v_name
                  FROM __SCHEMA__.worker_queue AS q
                 WHERE q.id = v_id;
            END IF;
            v_keys := '{}';
            v_key_limits := '{}';
            IF 'activity:' || v_name = ANY (v_limited) OR 'activity:' || v_name = ANY (v_rated) THEN
                v_keys := v_keys || ('activity:' || v_name);
                v_key_limits := v_key_limits
                                || v_limits[array_position(v_limited, 'activity:' || v_name)];
            END IF;
            FOREACH v_label IN ARRAY coalesce(v_item_labels, '{}') LOOP
                IF 'label:' || v_label = ANY (v_limited) OR 'label:' || v_label = ANY (v_rated) THEN
                    v_keys := v_keys || ('label:' || v_label);
                    v_key_limits := v_key_limits
                                    || v_limits[array_position(v_limited, 'label:' || v_label)];
                END IF;
                v_each := array_position(v_limited, 'label_each:' || split_part(v_label, '=', 1));
                IF v_each IS NOT NULL THEN
                    v_keys := v_keys || ('label_each:' || v_label);
                    v_key_limits := v_key_limits || v_limits[v_each];
                END IF;
            END LOOP;
            -- Whether a holder's lease is live, and the tokens, go by the
            -- server's clock: a caller's clock ahead of it (up to
            -- taskhub_max_clock_skew_ms) frees no held slot, refills no bucket.
            v_server_ms := __SCHEMA__.taskhub_clock_ms(NULL);
            FOR v_k IN 1 .. cardinality(v_keys) LOOP
                v_key_kind := split_part(v_keys[v_k], ':', 1);
                v_key_name := substr(v_keys[v_k], length(v_key_kind) + 2);
                v_limit := v_key_limits[v_k];
                v_slot := 0;  -- none needed (rated only), until a limit claims one
                -- One fetch at a time claims the key's slots and takes its
                -- tokens: the others skip it for this call, never waiting.
                -- Read after the lock, the slots and their holders' leases
                -- are as the last claim left them.
                IF NOT pg_try_advisory_xact_lock(
                           __SCHEMA__.taskhub_flow_lock_key(v_key_kind, v_key_name)) THEN
                    v_slot := NULL;
                ELSIF v_key_kind <> 'activity' AND NOT pg_try_advisory_xact_lock_shared(
                          __SCHEMA__.taskhub_flow_lock_key(
                              'guard:' || v_key_kind,
                              CASE WHEN v_key_kind = 'label_each'
                                   THEN split_part(v_key_name, '=', 1) ELSE v_key_name END)) THEN
                    -- A change of the label's rule is being made (its verb
                    -- holds the rule's guard, which covers every value of a
                    -- per-value limit): skip, never wait.
                    v_slot := NULL;
                ELSIF v_limit IS NOT NULL THEN
                    IF v_key_kind <> 'activity' THEN
                        -- The limit as committed now, under the guard: the
                        -- summary read at the start may predate a change.
                        SELECT r.max_running INTO v_limit
                          FROM __SCHEMA__.taskhub_flow_rules AS r
                         WHERE r.kind = v_key_kind
                           AND r.name = CASE WHEN v_key_kind = 'label_each'
                                             THEN split_part(v_key_name, '=', 1)
                                             ELSE v_key_name END
                           AND NOT r.paused;
                    END IF;
                END IF;
                IF v_slot IS NULL OR v_limit IS NULL THEN
                    NULL;  -- skipped above, or no limit (any more): no slot to claim
                ELSE
                    -- A free slot among the first max_running, walked in
                    -- order and no further than the first free one: the cost
                    -- follows the leases held, not the limit (a limit of
                    -- 10,000 with one lease held reads 16 slots). A slot
                    -- held beyond them (left by a lowered limit, until its
                    -- lease ends) takes one of them: with B such, the
                    -- (B+1)th free one is claimed, so no more than the limit
                    -- are ever held. The holders' leases are read by their
                    -- ids, one statement a table: a join of the slots to
                    -- the queue could be planned, with statistics that say
                    -- "empty", as a walk of the whole queue for each slot
                    -- (55 ms a fetch behind 100,000 rows).
                    v_slot := NULL;
                    v_beyond := 0;
                    SELECT coalesce(array_agg(f.item_id), '{}'),
                           coalesce(array_agg(f.lock_token), '{}')
                      INTO v_holders, v_tokens
                      FROM __SCHEMA__.taskhub_flow_slots AS f
                     WHERE f.kind = v_key_kind AND f.name = v_key_name
                       AND f.slot > v_limit
                       AND f.item_id IS NOT NULL;
                    IF cardinality(v_holders) > 0 THEN
                        SELECT count(*) INTO v_beyond
                          FROM __SCHEMA__.worker_queue AS q
                         WHERE q.id = ANY (v_holders) AND q.lock_token = ANY (v_tokens)
                           AND q.locked_until > v_server_ms;
                    END IF;
                    v_held_beyond := v_beyond;
                    v_read_slots := '{}';
                    v_from := 0;
                    LOOP
                        -- 16 slots at a time, by number, and which of their
                        -- holders still hold that lease.
                        SELECT coalesce(array_agg(f.slot ORDER BY f.slot), '{}'),
                               coalesce(array_agg(f.item_id ORDER BY f.slot), '{}'),
                               coalesce(array_agg(f.lock_token ORDER BY f.slot), '{}')
                          INTO v_slots, v_holders, v_tokens
                          FROM __SCHEMA__.taskhub_flow_slots AS f
                         WHERE f.kind = v_key_kind AND f.name = v_key_name
                           AND f.slot > v_from AND f.slot <= least(v_from + 16, v_limit);
                        v_read_slots := v_read_slots || v_slots;
                        SELECT coalesce(array_agg(q.lock_token), '{}') INTO v_live
                          FROM __SCHEMA__.worker_queue AS q
                         WHERE q.id = ANY (v_holders) AND q.lock_token = ANY (v_tokens)
                           AND q.locked_until > v_server_ms;
                        FOR v_n IN 1 .. cardinality(v_slots) LOOP
                            -- Held: its own lease (an item in two slots, one
                            -- left from an earlier lease, holds only the other).
                            CONTINUE WHEN v_tokens[v_n] = ANY (v_live);
                            IF v_beyond = 0 THEN
                                v_slot := v_slots[v_n];
                                EXIT;
                            END IF;
                            v_beyond := v_beyond - 1;
                        END LOOP;
                        EXIT WHEN v_slot IS NOT NULL OR v_from + 16 >= v_limit;
                        v_from := v_from + 16;
                    END LOOP;
                    IF v_slot IS NOT NULL THEN
                        UPDATE __SCHEMA__.taskhub_flow_slots AS s
                           SET item_id = v_id, lock_token = v_token
                         WHERE s.kind = v_key_kind AND s.name = v_key_name AND s.slot = v_slot;
                    END IF;
                    -- A limit for each value of a label: a value's slots are
                    -- made one at a time, by the fetches that need one more:
                    -- none free, and fewer made than the limit less those
                    -- held beyond it (by a lowered limit), the lowest number
                    -- missing. None free means the walk above read every
                    -- slot up to the limit: what it read says which exist.
                    IF v_slot IS NULL AND v_key_kind = 'label_each' THEN
                        IF cardinality(v_read_slots) + v_held_beyond < v_limit THEN
                            v_made := (SELECT min(n) FROM generate_series(1, v_limit) AS n
                                        WHERE NOT n = ANY (v_read_slots));
                            INSERT INTO __SCHEMA__.taskhub_flow_slots AS f
                                   (kind, name, slot, item_id, lock_token)
                            VALUES (v_key_kind, v_key_name, v_made, v_id, v_token)
                            ON CONFLICT (kind, name, slot) DO NOTHING
                            RETURNING f.slot INTO v_slot;
                        END IF;
                    END IF;
                END IF;
                IF v_slot IS NOT NULL AND v_keys[v_k] = ANY (v_rated) THEN
                    -- A token, refilled for the time since the last one was
                    -- taken: only looked at here, taken once every key of the
                    -- item has its slot and its token (a token taken for an
                    -- item that is then skipped would be lost).
                    PERFORM 1
                      FROM __SCHEMA__.taskhub_flow_buckets AS b
                     WHERE b.kind = v_key_kind AND b.name = v_key_name
                       AND least(b.burst, b.tokens
                                          + greatest(0, v_server_ms - b.refilled_at_ms)
                                            * b.per_second / 1000.0) >= 1;
                    IF NOT FOUND THEN
                        v_slot := NULL;
                    END IF;
                END IF;
                IF v_slot IS NULL THEN
                    -- Contended, full or out of tokens: its items are left out
                    -- of the next scans of this call.
                    IF v_key_kind = 'activity' THEN
                        v_skip_names := v_skip_names || v_key_name;
                    ELSE
                        v_skip_labels := v_skip_labels || v_key_name;
                    END IF;
                    CONTINUE attempts;
                END IF;
            END LOOP;
            -- Every key has room: the tokens, which the keys' locks kept
            -- (none to take without a rate: a test of NULL would not skip).
            FOR v_k IN 1 .. CASE WHEN v_rated IS NULL THEN 0 ELSE cardinality(v_keys) END LOOP
                CONTINUE WHEN NOT v_keys[v_k] = ANY (v_rated);
                v_key_kind := split_part(v_keys[v_k], ':', 1);
                v_key_name := substr(v_keys[v_k], length(v_key_kind) + 2);
                UPDATE __SCHEMA__.taskhub_flow_buckets AS b
                   SET tokens = least(b.burst, b.tokens
                                               + greatest(0, v_server_ms - b.refilled_at_ms)
                                                 * b.per_second / 1000.0) - 1,
                       refilled_at_ms = greatest(b.refilled_at_ms, v_server_ms)
                 WHERE b.kind = v_key_kind AND b.name = v_key_name;
            END LOOP;
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
