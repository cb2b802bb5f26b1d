-- One change of a flow rule, for the taskhub_*_flow verbs: checks the key,
-- applies p_action ('pause', 'resume', 'set limit', 'remove limit',
-- 'set rate', 'remove rate') to the key's rule (deleted when it neither
-- pauses nor limits), gives it exactly max_running slots
-- (taskhub_flow_slots; a slot removed while held lets its item finish; a
-- limit for each value of a label gets its slots from the fetch that first
-- meets the value) and a
-- bucket while it has a rate (taskhub_flow_buckets: full when the rate is
-- new, its tokens kept up to the new burst when it changes), rewrites the
-- summary that the fetches read (taskhub_flow_summary), and records
-- the change in taskhub_flow_changes, all or nothing. Returns the rule
-- before (NULLs: none). Bad input: 22023 in one line, nothing changed.
CREATE FUNCTION __SCHEMA__.taskhub_change_flow_rule(
    p_kind                     text,
    p_name                     text,
    p_action                   text,
    p_max_running              integer,
    p_per_second               double precision,
    p_burst                    integer,
    p_reason                   text,
    OUT out_paused_before      boolean,
    OUT out_max_running_before integer,
    OUT out_per_second_before  double precision
)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_paused          boolean;
    v_max_running     integer;
    v_per_second      double precision;
    v_burst           integer;
    v_burst_before    integer;
    v_now             timestamptz := clock_timestamp();
    v_now_ms          bigint := __SCHEMA__.taskhub_clock_ms(NULL);
    v_id              bigint;
    v_paused_names    text[];
    v_paused_labels   text[];
    v_paused_orchestrations text[];
    v_limited_names   text[];
    v_rated_names     text[];
    v_limits          integer[];
    v_any             boolean;
BEGIN
    IF p_kind IS NULL OR p_kind NOT IN ('activity', 'label', 'label_each', 'orchestration') THEN
        RAISE EXCEPTION 'a flow rule''s kind must be activity, label, label_each or '
                        'orchestration (got %)',
            coalesce(quote_literal(p_kind), 'NULL') USING ERRCODE = '22023';
    ELSIF p_name IS NULL OR p_name = '' OR octet_length(p_name) > 1000 THEN
        RAISE EXCEPTION 'a flow rule''s name must be a non-empty text of at most 1000 bytes'
            USING ERRCODE = '22023';
    ELSIF p_kind = 'label_each' AND p_action NOT IN ('set limit', 'remove limit') THEN
        RAISE EXCEPTION 'a label''s values can each be limited, not paused or rated: % one '
                        'value (kind label, name %=VALUE)', p_action, p_name
            USING ERRCODE = '22023';
    ELSIF p_kind = 'orchestration' AND p_action IN ('set rate', 'remove rate') THEN
        RAISE EXCEPTION 'an orchestration''s turns can be paused or limited, not rated: rate '
                        'its activities (kind activity) or its instances'' label (kind label)'
            USING ERRCODE = '22023';
    ELSIF p_kind = 'label_each' AND p_name !~ '^[a-z][a-z0-9_.-]{0,62}$' THEN
        RAISE EXCEPTION 'label key % is not a key (a-z, 0-9, _ . - from a letter, up to 63 bytes)',
            quote_literal(left(p_name, 80)) USING ERRCODE = '22023';
    ELSIF p_action = 'set limit' AND (p_max_running IS NULL OR p_max_running < 1
                                      OR p_max_running > 10000) THEN
        RAISE EXCEPTION 'max_running must be a whole number from 1 to 10000 (got %)',
            coalesce(p_max_running::text, 'NULL') USING ERRCODE = '22023';
    ELSIF p_action = 'set rate' AND (p_per_second IS NULL OR NOT p_per_second > 0
                                     OR p_per_second > 100000) THEN
        RAISE EXCEPTION 'per_second must be a number above 0 and at most 100000 (got %)',
            coalesce(p_per_second::text, 'NULL') USING ERRCODE = '22023';
    ELSIF p_action = 'set rate' AND (p_burst < 1 OR p_burst > 100000) THEN
        RAISE EXCEPTION 'burst must be a whole number from 1 to 100000 (got %)', p_burst
            USING ERRCODE = '22023';
    ELSIF octet_length(p_reason) > 2000 THEN
        RAISE EXCEPTION 'a reason must be at most 2000 bytes' USING ERRCODE = '22023';
    ELSIF p_action IS NULL OR p_action NOT IN ('pause', 'resume', 'set limit', 'remove limit',
                                               'set rate', 'remove rate') THEN
        RAISE EXCEPTION 'unknown flow rule action %', coalesce(quote_literal(p_action), 'NULL')
            USING ERRCODE = '22023';
    END IF;

    IF p_kind = 'label' THEN
        -- The label's own rules (taskhub_check_steering says them).
        PERFORM __SCHEMA__.taskhub_check_steering(NULL, ARRAY[p_name]);
    END IF;

    -- Changes one at a time: each rewrites the summary from the rules
    -- as committed (a rule's row may not exist yet). Fetches never take it.
    PERFORM pg_advisory_xact_lock(hashtextextended('taskhub:__SCHEMA__:flow rules', 0));
    -- And the key's own lock, which a fetch holds while it claims a slot or
    -- takes a token: the slots and the bucket change under no fetch.
    PERFORM pg_advisory_xact_lock(__SCHEMA__.taskhub_flow_lock_key(p_kind, p_name));
    -- A label's rule also guards every claim under it (fetch_work_item and
    -- taskhub_claim_turn_slot take the guard shared, without waiting): a
    -- per-value limit's values lock one by one, and a label's turn slots
    -- have keys of their own.
    IF p_kind <> 'activity' THEN
        PERFORM pg_advisory_xact_lock(__SCHEMA__.taskhub_flow_lock_key('guard:' || p_kind, p_name));
    END IF;
    SELECT r.paused, r.max_running, r.per_second, r.burst
      INTO out_paused_before, out_max_running_before, out_per_second_before, v_burst_before
      FROM __SCHEMA__.taskhub_flow_rules AS r
     WHERE r.kind = p_kind AND r.name = p_name;

    v_paused := CASE p_action WHEN 'pause' THEN true
                              WHEN 'resume' THEN false
                              ELSE coalesce(out_paused_before, false) END;
    v_max_running := CASE p_action WHEN 'set limit' THEN p_max_running
                                   WHEN 'remove limit' THEN NULL
                                   ELSE out_max_running_before END;
    v_per_second := CASE p_action WHEN 'set rate' THEN p_per_second
                                  WHEN 'remove rate' THEN NULL
                                  ELSE out_per_second_before END;
    -- A burst not given: one second's worth (at least 1).
    v_burst := CASE p_action WHEN 'set rate' THEN coalesce(p_burst, greatest(1, ceil(p_per_second)::integer))
                             WHEN 'remove rate' THEN NULL
                             ELSE v_burst_before END;
    IF v_paused OR v_max_running IS NOT NULL OR v_per_second IS NOT NULL THEN
        INSERT INTO __SCHEMA__.taskhub_flow_rules AS r
               (kind, name, paused, max_running, per_second, burst, changed_at, changed_by, reason)
        VALUES (p_kind, p_name, v_paused, v_max_running, v_per_second, v_burst, v_now,
                session_user, p_reason)
        ON CONFLICT (kind, name) DO UPDATE
           SET paused      = EXCLUDED.paused,
               max_running = EXCLUDED.max_running,
               per_second  = EXCLUDED.per_second,
               burst       = EXCLUDED.burst,
               changed_at  = EXCLUDED.changed_at,
               changed_by  = EXCLUDED.changed_by,
               reason      = EXCLUDED.reason;
    ELSE
        DELETE FROM __SCHEMA__.taskhub_flow_rules AS r
         WHERE r.kind = p_kind AND r.name = p_name;
    END IF;

    -- max_running slots (none without a limit). A held slot beyond them
    -- stays, and counts, until its lease ends (by the server's clock).
    -- A limit for each value of a label: the slots of every value (the
    -- fetches make them as they meet the values).
    DELETE FROM __SCHEMA__.taskhub_flow_slots AS s
     WHERE s.kind = p_kind
       AND CASE WHEN p_kind = 'label_each'
                THEN left(s.name, length(p_name) + 1) = p_name || '='
                ELSE s.name = p_name END
       AND s.slot > coalesce(v_max_running, 0)
       AND NOT EXISTS (SELECT 1
                         FROM __SCHEMA__.worker_queue AS q
                        WHERE q.id = s.item_id AND q.lock_token = s.lock_token
                          AND q.locked_until > v_now_ms);
    -- A label's turn slots (taskhub_claim_turn_slot) beyond the limit go
    -- too, when no live lease holds them.
    IF p_kind <> 'activity' THEN
        DELETE FROM __SCHEMA__.taskhub_flow_slots AS s
         WHERE s.kind = 'turn:' || p_kind
           AND CASE WHEN p_kind = 'label_each'
                    THEN left(s.name, length(p_name) + 1) = p_name || '='
                    ELSE s.name = p_name END
           AND s.slot > coalesce(v_max_running, 0)
           AND NOT EXISTS (SELECT 1
                             FROM __SCHEMA__.instance_locks AS il
                            WHERE il.lock_token = s.lock_token
                              AND il.locked_until > v_now_ms);
    END IF;
    -- (An orchestration's limit holds turns only: no activity slots.)
    IF v_max_running IS NOT NULL AND p_kind IN ('activity', 'label') THEN
        INSERT INTO __SCHEMA__.taskhub_flow_slots AS s (kind, name, slot, item_id, lock_token)
        SELECT p_kind, p_name, n, NULL, NULL
          FROM generate_series(1, v_max_running) AS n
        ON CONFLICT (kind, name, slot) DO NOTHING;
    END IF;

    -- A bucket while there is a rate: full when new, its tokens kept (up to
    -- the new burst) when the rate changes.
    IF v_per_second IS NULL THEN
        DELETE FROM __SCHEMA__.taskhub_flow_buckets AS b
         WHERE b.kind = p_kind AND b.name = p_name;
    ELSE
        INSERT INTO __SCHEMA__.taskhub_flow_buckets AS b
               (kind, name, per_second, burst, tokens, refilled_at_ms)
        VALUES (p_kind, p_name, v_per_second, v_burst, v_burst, v_now_ms)
        ON CONFLICT (kind, name) DO UPDATE
           SET per_second = EXCLUDED.per_second,
               burst      = EXCLUDED.burst,
               tokens     = least(b.tokens, EXCLUDED.burst);
    END IF;

    -- What the fetches read: the paused activities, labels and
    -- orchestrations, and
    -- the limited and rated keys as kind:name.
    SELECT coalesce(array_agg(r.name) FILTER (WHERE r.paused AND r.kind = 'activity'), '{}'),
           coalesce(array_agg(r.name) FILTER (WHERE r.paused AND r.kind = 'label'), '{}'),
           coalesce(array_agg(r.name) FILTER (WHERE r.paused AND r.kind = 'orchestration'), '{}'),
           coalesce(array_agg(r.kind || ':' || r.name)
                        FILTER (WHERE NOT r.paused AND r.max_running IS NOT NULL), '{}'),
           coalesce(array_agg(r.max_running)
                        FILTER (WHERE NOT r.paused AND r.max_running IS NOT NULL), '{}'),
           coalesce(array_agg(r.kind || ':' || r.name)
                        FILTER (WHERE NOT r.paused AND r.per_second IS NOT NULL), '{}'),
           count(*) > 0
      INTO v_paused_names, v_paused_labels, v_paused_orchestrations, v_limited_names, v_limits, v_rated_names, v_any
      FROM __SCHEMA__.taskhub_flow_rules AS r;
    IF v_any THEN
        INSERT INTO __SCHEMA__.taskhub_flow_summary AS f
               (kind, paused, paused_labels, paused_orchestrations, limited, limits, rated)
        VALUES ('rules', v_paused_names, v_paused_labels, v_paused_orchestrations,
                v_limited_names, v_limits, v_rated_names)
        ON CONFLICT (kind) DO UPDATE
           SET paused        = EXCLUDED.paused,
               paused_labels = EXCLUDED.paused_labels,
               paused_orchestrations = EXCLUDED.paused_orchestrations,
               limited       = EXCLUDED.limited,
               limits        = EXCLUDED.limits,
               rated         = EXCLUDED.rated;
    ELSE
        DELETE FROM __SCHEMA__.taskhub_flow_summary AS f WHERE f.kind = 'rules';
    END IF;

    v_id := nextval('__SCHEMA__.taskhub_flow_changes_id_seq');
    INSERT INTO __SCHEMA__.taskhub_flow_changes
           (id, changed_at, changed_by, kind, name, action, paused_before, paused_after,
            max_running_before, max_running_after, per_second_before, per_second_after,
            burst_before, burst_after, reason)
    VALUES (v_id, v_now, session_user, p_kind, p_name, p_action,
            coalesce(out_paused_before, false), v_paused,
            out_max_running_before, v_max_running, out_per_second_before, v_per_second,
            v_burst_before, v_burst, p_reason);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_change_flow_rule(text, text, text, integer, double precision, integer, text) FROM PUBLIC;
