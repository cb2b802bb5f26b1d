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
-- Nor into a bitmap scan (revision 0026): a bitmap scan never marks the index
-- entries of deleted messages dead, so when every read of the queue's
-- visible_at index was one (as the statistics of a small, churning queue
-- can make it after any ANALYZE), the entries of every message consumed
-- since the last VACUUM were read again by every fetch: at 60 turns a
-- second a fetch went from 0.6 ms to 5 ms within a minute (docs/benchmarks.md,
-- "Retention at 60/s"). A plain index scan marks them as it passes.
--
-- The turn (history, messages, KV snapshot) is handed over as json: the
-- text as stored, never built into jsonb and printed again. A history
-- stored as json (revision 0029) was validated as it was written, and is
-- handed over with no parse at all: a hot turn costs about what reading its
-- rows does.
-- A hub that served runtimes before revision 0017 keeps jsonb until it is
-- switched (`taskhub-pg turn-form json`, with its runtimes stopped: a
-- runtime has the result type prepared). __TURN_FORM__ is json or jsonb.
--
-- Returns no row when nothing was leased.
CREATE FUNCTION __SCHEMA__.fetch_orchestration_item(
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
    out_history               __TURN_FORM__,
    out_messages              __TURN_FORM__,
    out_lock_token            text,
    out_attempt_count         integer,
    out_kv_snapshot           __TURN_FORM__
)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
-- With seq scans priced out, plan costs pass jit_above_cost, and compiling each
-- query would take longer than running it (12-19 ms per fetch at depth).
SET jit = off
AS $$
DECLARE
    c_max_candidates constant integer := 8;
    c_scan_rows      constant integer := 16;    -- queue rows of the first page
    c_max_page_rows  constant integer := 1024;  -- pages double up to this
    v_filtered   boolean := p_min_version_packed IS NOT NULL OR p_max_version_packed IS NOT NULL;
    v_min        bigint  := coalesce(p_min_version_packed, 0);
    v_max        bigint  := coalesce(p_max_version_packed, 9223372036854775807);
    v_scan_ms    bigint;
    v_scan_ts    timestamptz;
    v_candidates text[];
    v_passed     text[];    -- leased or outside the version range: not read again
    v_page       text[];
    v_page_labels text[];   -- each page instance's labels, as one text
    v_page_ranks timestamptz[];  -- and the rank and id of its first message
    v_page_ids   bigint[];
    v_candidate_labels text[];
    v_pick       integer;
    v_leased     text[];
    v_after_ts   timestamptz;
    v_after_id   bigint;
    v_page_rows  integer;
    v_read       integer;
    v_row        record;
    v_message    record;
    v_count      integer;
    v_offset     integer;
    v_instance   text;
    v_now_ms     bigint;
    v_now_ts     timestamptz;
    v_held_until bigint;
    v_visible    bigint;
    v_locked     bigint;
    v_live_ids   bigint[];
    v_last_id    bigint;
    v_in_order   boolean;   -- the instance's messages came in id order
    v_items      text[];    -- the live messages' work items, in id order
    v_buried_ids bigint[];
    v_cap        integer;
    v_messages_text text;
    v_attempts   integer;
    v_name       text;
    v_version    text;
    v_execution  bigint;
    v_known      boolean;
    v_history_json json;
    v_messages   __TURN_FORM__;
    v_history    __TURN_FORM__;
    v_kv         jsonb;
    v_token      text;
    v_locked_until bigint;
    v_locked_at  bigint;
    v_priority   smallint;  -- the turn's steering, from its messages
    v_labels     text[];
    -- Flow control by label (docs/flow-control.md): the labels paused or
    -- found full in this call, the label rules, whether a pass skipped a
    -- label (then the queue is read again without it).
    v_skip_labels text[];
    v_limited    text[];
    v_limits     integer[];
    v_label      text;
    v_rule       text;
    v_limit      integer;
    v_server_ms  bigint;
    v_label_skipped boolean;
    -- Rules by orchestration: the names paused or found full in this call,
    -- whether any rule names an orchestration, the turn's orchestration (from
    -- its messages, else its instance) and whether a message lacked it.
    v_skip_orchs text[];
    v_orch_rules boolean;
    v_orch       text;
    v_unnamed    boolean;
    -- Turns taken in turn by label set (a per-value limit is set): the
    -- lane this pass reads (NULL: the whole queue), the last lane read
    -- (where the next fetch of this session goes on), lanes left to try.
    v_lane       text[];
    v_cursor     text[];
    v_lanes_left integer := 0;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.fetch_orchestration_item($1, $2, $3, $4)'
            USING p_now_ms, p_lock_timeout_ms, p_min_version_packed, p_max_version_packed;
        RETURN;
    END IF;
    IF p_lock_timeout_ms IS NULL OR p_lock_timeout_ms <= 0 THEN
        RAISE EXCEPTION 'p_lock_timeout_ms must be positive' USING ERRCODE = '22023';
    ELSIF v_min > v_max THEN
        RAISE EXCEPTION 'p_min_version_packed must not exceed p_max_version_packed'
            USING ERRCODE = '22023';
    END IF;

    -- 1. Candidates: the instances of the first visible messages by rank
    --    (highest priority first, then oldest: taskhub_rank_of; without a
    --    priority the rank is visible_at) that have no live lease (and, with
    --    a version range, whose current execution is pinned inside it).
    --    Nothing is locked; everything is re-checked under lock. The queue is
    --    read in pages along the rank's index (taskhub_orch_rank_idx), from
    --    the first message; a page's instances are checked for leases in
    --    one read, and leased ones are left out of the following pages. Pages
    --    double in size, so a leased instance with a long backlog is walked
    --    past in a few reads, and the walk ends at the end of the visible
    --    queue: no stored row can keep a fetch from the work behind it.
    --
    --    Every statement of this function reads or writes one table and holds
    --    no subquery and no volatile call: on a hub distributed by Citus such
    --    a statement is planned on its node like a plain one (the fast path),
    --    where a join or a subquery would cost a distributed plan on every
    --    call (docs/scale-out.md, rule 5).
    --
    --    Flow control: the rules' summary is read once. Paused labels are
    --    left out of the scan; an instance whose turn a label's limit holds
    --    back is skipped with its label, and when a pass skipped one, the
    --    queue is read on without it (at most 32 passes), so that a full
    --    tenant's backlog keeps no other tenant's turns waiting.
    SELECT f.paused_labels, f.paused_orchestrations, nullif(f.limited, '{}'), f.limits
      INTO v_skip_labels, v_skip_orchs, v_limited, v_limits
      FROM __SCHEMA__.taskhub_flow_summary AS f
     WHERE f.kind = 'rules';
    v_skip_labels := coalesce(v_skip_labels, '{}');
    v_skip_orchs := coalesce(v_skip_orchs, '{}');
    v_orch_rules := cardinality(v_skip_orchs) > 0
                    OR (v_limited IS NOT NULL
                        AND EXISTS (SELECT 1 FROM unnest(v_limited) AS k
                                     WHERE left(k, 14) = 'orchestration:'));
    v_passed := '{}';
    -- With a limit for each value of a label, the label sets of the queue
    -- take turns (docs/flow-control.md, "Fairness"): each fetch first reads
    -- the set after the one this session last served (taskhub_orch_lane_idx
    -- finds it, and its first messages, in a probe each), up to 8 sets,
    -- then the whole queue in rank order, which is also the turn of the
    -- messages without labels when the sets come round again. The session's
    -- place is a setting of its own (a label set as lines): its worst value
    -- only changes which set goes first.
    IF v_limited IS NOT NULL
       AND EXISTS (SELECT 1 FROM unnest(v_limited) AS k WHERE left(k, 11) = 'label_each:') THEN
        v_lanes_left := 8;
        v_cursor := coalesce(string_to_array(
                        nullif(current_setting('taskhub.turn_lane', true), ''), E'\n'), '{}');
        -- Work with a priority first, whatever its set (or none): when the
        -- head of the whole queue has one, this fetch reads the whole queue.
        v_scan_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
        v_scan_ts := to_timestamp(v_scan_ms / 1000.0);
        SELECT q.taskhub_priority INTO v_priority
          FROM __SCHEMA__.orchestrator_queue AS q
         WHERE coalesce(q.taskhub_rank, q.visible_at) <= v_scan_ts
           AND CASE WHEN q.visible_at <= v_scan_ts THEN true ELSE false END
           AND (q.lock_token IS NULL OR q.locked_until <= v_scan_ms)
         ORDER BY coalesce(q.taskhub_rank, q.visible_at), q.id + 0
         LIMIT 1;
        IF v_priority > 0 THEN
            v_lanes_left := 0;
            v_cursor := NULL;  -- the session's place stays where it was
        END IF;
    END IF;
    -- A pass goes on from where the last one stopped trying: what it passed
    -- over was leased, tried or of a label now skipped (and instances it read
    -- but did not try, once it had its candidates, are read again).
    v_after_ts := '-infinity';  -- the rank of the last message read
    v_after_id := 0;
    <<passes>>
    FOR v_pass IN 1 .. 32 + 8 LOOP
    v_label_skipped := false;
    v_scan_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
    v_scan_ts := to_timestamp(v_scan_ms / 1000.0);
    IF v_lanes_left > 0 THEN
        -- The next label set after the cursor, or none left: then the whole
        -- queue, from its start, and the sets begin again after it.
        v_lane := NULL;
        SELECT q.taskhub_labels INTO v_lane
          FROM __SCHEMA__.orchestrator_queue AS q
         WHERE q.taskhub_labels > v_cursor
         ORDER BY q.taskhub_labels
         LIMIT 1;
        v_lanes_left := CASE WHEN v_lane IS NULL THEN 0 ELSE v_lanes_left - 1 END;
        v_cursor := coalesce(v_lane, '{}');
        v_after_ts := '-infinity';
        v_after_id := 0;
        -- A set with a label paused or found full: the next one.
        CONTINUE passes WHEN v_lane && v_skip_labels;
    ELSIF v_lane IS NOT NULL THEN
        v_lane := NULL;  -- the lanes tried: the whole queue, from its start
        v_after_ts := '-infinity';
        v_after_id := 0;
    END IF;
    v_candidates := '{}';
    v_candidate_labels := '{}';
    v_page_rows := c_scan_rows;
    LOOP
        v_page := '{}';
        v_page_labels := '{}';
        v_page_ranks := '{}';
        v_page_ids := '{}';
        v_read := 0;
        IF v_lane IS NOT NULL THEN
            -- One label set's messages (its lane: taskhub_orch_lane_idx).
            FOR v_row IN
                SELECT q.instance_id, coalesce(q.taskhub_rank, q.visible_at) AS rank, q.id,
                       array_to_string(q.taskhub_labels, E'\n') AS labels
                  FROM __SCHEMA__.orchestrator_queue AS q
                 WHERE q.taskhub_labels = v_lane
                   AND coalesce(q.taskhub_rank, q.visible_at) <= v_scan_ts
                   AND (coalesce(q.taskhub_rank, q.visible_at), q.id + 0) > (v_after_ts, v_after_id)
                   AND CASE WHEN q.visible_at <= v_scan_ts THEN true ELSE false END
                   AND (q.lock_token IS NULL OR q.locked_until <= v_scan_ms)
                   AND q.instance_id <> ALL (v_passed)
                   AND (cardinality(v_skip_orchs) = 0 OR q.taskhub_orchestration IS NULL
                        OR q.taskhub_orchestration <> ALL (v_skip_orchs))
                 ORDER BY q.taskhub_labels, coalesce(q.taskhub_rank, q.visible_at), q.id + 0
                 LIMIT v_page_rows
            LOOP
                v_read := v_read + 1;
                v_after_ts := v_row.rank;
                v_after_id := v_row.id;
                IF NOT v_row.instance_id = ANY (v_page) THEN
                    v_page := v_page || v_row.instance_id;
                    v_page_labels := v_page_labels || v_row.labels;
                    v_page_ranks := v_page_ranks || v_row.rank;
                    v_page_ids := v_page_ids || v_row.id;
                END IF;
            END LOOP;
        ELSE
        FOR v_row IN
            SELECT q.instance_id, coalesce(q.taskhub_rank, q.visible_at) AS rank, q.id,
                   array_to_string(q.taskhub_labels, E'\n') AS labels
              FROM __SCHEMA__.orchestrator_queue AS q
             WHERE coalesce(q.taskhub_rank, q.visible_at) <= v_scan_ts
               AND (coalesce(q.taskhub_rank, q.visible_at), q.id + 0) > (v_after_ts, v_after_id)
               -- Due: a test no index serves, so that the rank's index alone
               -- can drive the scan, whatever the statistics.
               AND CASE WHEN q.visible_at <= v_scan_ts THEN true ELSE false END
               AND (q.lock_token IS NULL OR q.locked_until <= v_scan_ms)
               AND q.instance_id <> ALL (v_passed)
               AND (cardinality(v_skip_labels) = 0
                    OR NOT coalesce(q.taskhub_labels && v_skip_labels, false))
               -- A paused or full orchestration's messages, where they name
               -- it (the others are checked as candidates).
               AND (cardinality(v_skip_orchs) = 0 OR q.taskhub_orchestration IS NULL
                    OR q.taskhub_orchestration <> ALL (v_skip_orchs))
             ORDER BY coalesce(q.taskhub_rank, q.visible_at), q.id + 0
             LIMIT v_page_rows
        LOOP
            v_read := v_read + 1;
            v_after_ts := v_row.rank;
            v_after_id := v_row.id;
            IF NOT v_row.instance_id = ANY (v_page) THEN
                v_page := v_page || v_row.instance_id;
                v_page_labels := v_page_labels || v_row.labels;
                v_page_ranks := v_page_ranks || v_row.rank;
                v_page_ids := v_page_ids || v_row.id;
            END IF;
        END LOOP;
        END IF;
        EXIT WHEN v_read = 0;

        SELECT coalesce(array_agg(il.instance_id), '{}') INTO v_leased
          FROM __SCHEMA__.instance_locks AS il
         WHERE il.instance_id = ANY (v_page)
           AND il.locked_until > v_scan_ms;
        FOR v_n IN 1 .. cardinality(v_page) LOOP
            v_instance := v_page[v_n];
            IF v_instance = ANY (v_leased)
               OR (v_filtered AND __SCHEMA__.taskhub_outside_version_range(v_instance, v_min, v_max)) THEN
                v_passed := v_passed || v_instance;
            ELSIF NOT v_instance = ANY (v_candidates) THEN
                v_candidates := v_candidates || v_instance;
                v_candidate_labels := v_candidate_labels || v_page_labels[v_n];
                IF cardinality(v_candidates) >= c_max_candidates THEN
                    -- The page's instances after this one were read, not
                    -- tried: the next pass reads again from the first of
                    -- them (just before its first message), so that none is
                    -- passed over (revision 0029: a pass after a skip went on
                    -- past them, and an instance behind a full or paused key
                    -- could wait a whole call, call after call).
                    IF v_n < cardinality(v_page) THEN
                        v_after_ts := v_page_ranks[v_n + 1];
                        v_after_id := v_page_ids[v_n + 1] - 1;
                    END IF;
                    EXIT;
                END IF;
            END IF;
        END LOOP;
        EXIT WHEN cardinality(v_candidates) >= c_max_candidates OR v_read < v_page_rows;
        v_page_rows := least(v_page_rows * 2, c_max_page_rows);
    END LOOP;

    v_count := cardinality(v_candidates);
    IF v_count = 0 THEN
        CONTINUE passes WHEN v_lane IS NOT NULL;  -- the next set, or the whole queue
        RETURN;
    END IF;

    -- 2. Try order: the oldest first, then the others from a random starting
    --    point, so that dispatchers who lost the oldest spread out.
    v_offset := floor(random() * greatest(v_count - 1, 1))::integer;

    <<candidates>>
    FOR v_idx IN 1 .. v_count LOOP
        v_pick := CASE WHEN v_idx = 1 THEN 1 ELSE 2 + (v_idx - 2 + v_offset) % (v_count - 1) END;
        v_instance := v_candidates[v_pick];
        -- A label found full earlier in this call: not tried.
        CONTINUE WHEN cardinality(v_skip_labels) > 0
                  AND string_to_array(v_candidate_labels[v_pick], E'\n') && v_skip_labels;

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
        CONTINUE WHEN v_filtered
                  AND __SCHEMA__.taskhub_outside_version_range(v_instance, v_min, v_max);

        -- 3. Lock every visible, unleased message of the instance without
        --    waiting. A turn must see its messages in order, none skipped: the
        --    visible messages are counted after the locks are taken, and if
        --    any could not be locked (or one arrived in between), the instance
        --    is skipped. Messages handed out v_cap times without an ack are
        --    set apart for dead_letters.
        v_locked := 0;
        v_last_id := NULL;
        v_live_ids := NULL;
        v_buried_ids := NULL;
        v_attempts := NULL;
        v_priority := NULL;
        v_labels := NULL;
        v_orch := NULL;
        v_unnamed := false;
        v_items := '{}';
        v_in_order := true;
        FOR v_message IN
            SELECT q.id, q.attempt_count, q.work_item, q.taskhub_priority, q.taskhub_labels,
                   q.taskhub_orchestration
              FROM __SCHEMA__.orchestrator_queue AS q
             WHERE q.instance_id = v_instance
               -- One test, which no index serves: only the instance's index
               -- can drive this read, whatever the statistics (a walk of the
               -- visible_at index would read every visible message).
               AND CASE WHEN q.visible_at <= v_now_ts
                        THEN q.lock_token IS NULL OR q.locked_until <= v_now_ms
                        ELSE false END
               -- No ORDER BY (revision 0029): the primary key could serve it,
               -- and a plan made from statistics that say "no rows" (a queue
               -- analyzed after a churn emptied it) walked the whole key in id
               -- order rather than sort "one row", filtering out every message
               -- of the queue. With no order asked, no index but the
               -- instance's has a use here, so none other can be planned. Its
               -- scan returns id order; the loop checks, and sorts if not.
               FOR UPDATE SKIP LOCKED
        LOOP
            v_in_order := v_in_order AND v_message.id > coalesce(v_last_id, 0);
            v_last_id := v_message.id;
            v_locked := v_locked + 1;
            -- The dead-letter cap (dead_letter_after_attempts), read once, and
            -- only for a message handed out before: a first delivery is never
            -- set apart.
            IF v_message.attempt_count > 0 AND v_cap IS NULL THEN
                v_cap := __SCHEMA__.taskhub_dead_letter_cap();
            END IF;
            IF v_message.attempt_count = 0 OR v_message.attempt_count < v_cap THEN
                v_live_ids := v_live_ids || v_message.id;
                v_items := v_items || v_message.work_item;
                v_attempts := greatest(v_attempts, v_message.attempt_count);
                -- The turn's steering: its messages', the highest priority.
                v_priority := greatest(v_priority, v_message.taskhub_priority);
                v_labels := coalesce(v_labels, v_message.taskhub_labels);
                v_orch := coalesce(v_orch, v_message.taskhub_orchestration);
                v_unnamed := v_unnamed OR v_message.taskhub_orchestration IS NULL;
            ELSE
                v_buried_ids := v_buried_ids || v_message.id;
            END IF;
        END LOOP;
        CONTINUE WHEN v_locked = 0;
        SELECT count(*) INTO v_visible
          FROM __SCHEMA__.orchestrator_queue AS v
         WHERE v.instance_id = v_instance
           AND CASE WHEN v.visible_at <= v_now_ts
                    THEN v.lock_token IS NULL OR v.locked_until <= v_now_ms
                    ELSE false END;
        CONTINUE WHEN v_locked <> v_visible;

        IF v_buried_ids IS NOT NULL THEN
            PERFORM __SCHEMA__.taskhub_bury_orchestrator_messages(v_instance, v_buried_ids, v_cap);
        END IF;
        CONTINUE WHEN v_live_ids IS NULL;
        -- The lease's token, new for each candidate: its slots' too.
        v_token := 'lock_' || gen_random_uuid();

        -- Rules by orchestration: a paused one is not handed out, a limited
        -- one takes a 'turn:orchestration' slot as a label's limit does
        -- (below). Skipped, the turn's messages are given its name where
        -- they lacked it, so that the scans leave them out from now on.
        IF v_orch_rules THEN
            IF v_orch IS NULL THEN
                SELECT i.orchestration_name INTO v_orch
                  FROM __SCHEMA__.instances AS i
                 WHERE i.instance_id = v_instance;
            END IF;
            IF v_orch IS NULL THEN
                -- A first turn queued without its name: its start names it.
                SELECT __SCHEMA__.taskhub_orchestration_name_of(
                           __SCHEMA__.taskhub_try_jsonb(m.item))
                  INTO v_orch
                  FROM unnest(v_items) AS m (item)
                 WHERE __SCHEMA__.taskhub_orchestration_name_of(
                           __SCHEMA__.taskhub_try_jsonb(m.item)) IS NOT NULL
                 LIMIT 1;
            END IF;
            IF v_orch = ANY (v_skip_orchs)
               OR ('orchestration:' || v_orch = ANY (v_limited)
                   AND (NOT pg_try_advisory_xact_lock(__SCHEMA__.taskhub_flow_lock_key(
                                'turn:orchestration', v_orch))
                        OR __SCHEMA__.taskhub_claim_turn_slot(
                               'turn:orchestration', v_orch, v_token,
                               __SCHEMA__.taskhub_clock_ms(NULL)) IS NULL)) THEN
                IF v_unnamed THEN
                    UPDATE __SCHEMA__.orchestrator_queue AS q
                       SET taskhub_orchestration = v_orch
                     WHERE q.instance_id = v_instance
                       AND q.id = ANY (v_live_ids)
                       AND q.taskhub_orchestration IS NULL;
                END IF;
                v_skip_orchs := v_skip_orchs || v_orch;
                v_passed := v_passed || v_instance;
                v_label_skipped := true;
                CONTINUE candidates;
            END IF;
        END IF;

        -- A label's limit holds turns too: a slot of each rule the turn's
        -- labels fall under ('turn:' slots, of the lease about to be
        -- written), under the key's lock taken without waiting; none: the
        -- label is skipped for this call (a slot claimed for a skipped turn
        -- frees itself: its token is never a lease's).
        IF v_limited IS NOT NULL AND v_labels IS NOT NULL THEN
            -- A label found full earlier in this pass: not tried again.
            CONTINUE WHEN v_labels && v_skip_labels;
            v_server_ms := __SCHEMA__.taskhub_clock_ms(NULL);
            FOREACH v_label IN ARRAY v_labels LOOP
                FOREACH v_rule IN ARRAY ARRAY['label:' || v_label,
                                              'label_each:' || split_part(v_label, '=', 1)] LOOP
                    v_limit := v_limits[array_position(v_limited, v_rule)];
                    CONTINUE WHEN v_limit IS NULL;
                    IF NOT pg_try_advisory_xact_lock(__SCHEMA__.taskhub_flow_lock_key(
                               'turn:' || split_part(v_rule, ':', 1), v_label))
                       OR __SCHEMA__.taskhub_claim_turn_slot(
                              'turn:' || split_part(v_rule, ':', 1), v_label, v_token,
                              v_server_ms) IS NULL THEN
                        v_skip_labels := v_skip_labels || v_label;
                        v_label_skipped := true;
                        CONTINUE candidates;
                    END IF;
                END LOOP;
            END LOOP;
        END IF;
        IF NOT v_in_order THEN
            SELECT array_agg(m.id ORDER BY m.id), array_agg(m.item ORDER BY m.id)
              INTO v_live_ids, v_items
              FROM unnest(v_live_ids, v_items) AS m (id, item);
        END IF;

        v_messages_text := '[' || array_to_string(v_items, ',') || ']';
        -- Leased from a set: the session's next fetch begins after it.
        IF v_cursor IS NOT NULL THEN
            PERFORM set_config('taskhub.turn_lane', array_to_string(v_cursor, E'\n'), false);
        END IF;

        -- 4. What the turn needs: instance metadata, the current execution's
        --    history (below) and the committed KV state.
        SELECT i.orchestration_name, coalesce(i.orchestration_version, 'unknown'),
               i.current_execution_id
          INTO v_name, v_version, v_execution
          FROM __SCHEMA__.instances AS i
         WHERE i.instance_id = v_instance;
        v_known := FOUND;
        IF v_execution IS NULL THEN
            SELECT max(e.execution_id) INTO v_execution
              FROM __SCHEMA__.executions AS e
             WHERE e.instance_id = v_instance;
            v_execution := coalesce(v_execution, 1);
        END IF;

        -- One parse of the messages, and of a history stored as text. No row
        -- may make a fetch fail (it would fail for every instance behind it,
        -- forever, with no attempt counted): if anything of the turn cannot
        -- be read or parsed (invalid JSON, a \u0000 escape, nesting too deep,
        -- too large), the turn is read again row by row, and what cannot be
        -- parsed is handed over as a JSON string. The runtime then sees a
        -- history error and, after its attempts, poisons this one instance
        -- (a message it cannot decode is retried until dead_letters takes
        -- it). One block per leased turn, none per skipped candidate.
        --
        -- Nor may a row fail the runtime's decoding of the turn, which it
        -- would on every delivery, never poisoning the instance: nesting
        -- deeper than it decodes (taskhub_max_json_depth), which the writes
        -- refuse but a row written before them or behind their back may
        -- hold. That costs a look at every row, so it is taken on a
        -- redelivery only: a turn the runtime could not decode comes back
        -- when its lease ends, and is then read row by row.
        BEGIN
            IF v_attempts > 0 THEN
                PERFORM __SCHEMA__.taskhub_raise_if_turn_too_deep(
                    v_instance, v_execution, v_items);
            END IF;
            -- Stored as json (a hub created at 0029 or later, or converted by
            -- turn-form json), each event was validated as it was written:
            -- the cast is none, and json_agg only appends. Stored as text, the
            -- cast parses each event here.
            SELECT json_agg(h.event_data::json ORDER BY h.event_id)
              INTO v_history_json
              FROM __SCHEMA__.history AS h
             WHERE h.instance_id = v_instance
               AND h.execution_id = v_execution;
            SELECT coalesce(jsonb_object_agg(s.key, jsonb_build_object(
                       'value', s.value, 'last_updated_at_ms', s.last_updated_at_ms)), '{}')
              INTO v_kv
              FROM __SCHEMA__.kv_store AS s
             WHERE s.instance_id = v_instance;
            v_messages := v_messages_text::__TURN_FORM__;
            v_history := coalesce(v_history_json, '[]'::json)::__TURN_FORM__;
        EXCEPTION WHEN data_exception OR program_limit_exceeded THEN
            SELECT turn.out_messages::__TURN_FORM__, turn.out_history::__TURN_FORM__,
                   turn.out_kv_snapshot
              INTO v_messages, v_history, v_kv
              FROM __SCHEMA__.taskhub_read_turn_row_by_row(v_instance, v_execution, v_live_ids)
                   AS turn;
        END;

        IF NOT v_known THEN
            -- First turn (or metadata never written): the start message names
            -- the orchestration, else the execution's OrchestrationStarted event.
            SELECT coalesce(m -> k ->> 'orchestration', 'Unknown'),
                   coalesce(m -> k ->> 'version', 'unknown')
              INTO v_name, v_version
              FROM jsonb_array_elements(v_messages::jsonb) WITH ORDINALITY AS msg (m, pos),
                   LATERAL (SELECT __SCHEMA__.taskhub_work_item_kind(m) AS k) AS kind
             WHERE k IN ('StartOrchestration', 'ContinueAsNew')
             ORDER BY pos
             LIMIT 1;
            IF NOT FOUND THEN
                SELECT coalesce(ev ->> 'name', 'Unknown'), coalesce(ev ->> 'version', 'unknown')
                  INTO v_name, v_version
                  FROM jsonb_array_elements(v_history::jsonb) AS ev
                 WHERE ev ->> 'type' = 'OrchestrationStarted'
                 LIMIT 1;
                IF NOT FOUND THEN
                    v_name := 'Unknown';
                    v_version := 'unknown';
                END IF;
            END IF;
        END IF;

        -- 5. Everything the caller receives is assembled: now the lease, from
        --    a clock read after all of it. locked_at is the server's own clock
        --    (the caller's may run up to taskhub_max_clock_skew_ms ahead), so
        --    that a renewal always ends the lease after it began.
        v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);
        v_locked_until := v_now_ms + p_lock_timeout_ms;
        v_locked_at := __SCHEMA__.taskhub_clock_ms(NULL);
        -- With the turn's steering, which the ack gives the work it queues.
        INSERT INTO __SCHEMA__.instance_locks AS il
               (instance_id, lock_token, locked_until, locked_at, taskhub_priority, taskhub_labels,
                taskhub_orchestration)
        VALUES (v_instance, v_token, v_locked_until, v_locked_at, v_priority, v_labels, v_name)
        ON CONFLICT (instance_id) DO UPDATE
           SET taskhub_priority = EXCLUDED.taskhub_priority,
               taskhub_labels   = EXCLUDED.taskhub_labels,
               taskhub_orchestration = EXCLUDED.taskhub_orchestration,
               lock_token   = EXCLUDED.lock_token,
               locked_until = EXCLUDED.locked_until,
               locked_at    = EXCLUDED.locked_at;
        UPDATE __SCHEMA__.orchestrator_queue AS q
           SET lock_token    = v_token,
               locked_until  = v_locked_until,
               attempt_count = q.attempt_count + 1
         WHERE q.instance_id = v_instance AND q.id = ANY (v_live_ids);

        out_instance_id := v_instance;
        out_orchestration_name := v_name;
        out_orchestration_version := v_version;
        out_execution_id := v_execution;
        out_history := v_history;
        out_messages := v_messages;
        out_lock_token := v_token;
        out_attempt_count := v_attempts + 1;
        out_kv_snapshot := v_kv::__TURN_FORM__;
        RETURN NEXT;
        RETURN;
    END LOOP;
    EXIT passes WHEN v_lane IS NULL AND v_lanes_left = 0 AND NOT v_label_skipped;
    END LOOP;

    RETURN;   -- every candidate was contended
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.fetch_orchestration_item(bigint, bigint, bigint, bigint) FROM PUBLIC;
