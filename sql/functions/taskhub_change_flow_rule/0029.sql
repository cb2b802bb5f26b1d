-- One change of a flow rule, for the taskhub_*_flow verbs: checks the key,
-- applies p_action ('pause', 'resume', 'set limit', 'remove limit') to the
-- key's rule (deleted when it neither pauses nor limits), and records the
-- change in taskhub_flow_changes, all or nothing. Returns the rule before
-- (NULLs: none). Bad input: 22023 in one line, nothing changed.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_change_flow_rule(
    p_kind                 text,
    p_name                 text,
    p_action               text,
    p_max_running          integer,
    p_reason               text,
    OUT out_paused_before      boolean,
    OUT out_max_running_before integer
)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_paused      boolean;
    v_max_running integer;
    v_now         timestamptz := clock_timestamp();
    v_id          bigint;
BEGIN
    IF p_kind IS DISTINCT FROM 'activity' THEN
        RAISE EXCEPTION 'a flow rule''s kind must be activity (got %)',
            coalesce(quote_literal(p_kind), 'NULL') USING ERRCODE = '22023';
    ELSIF p_name IS NULL OR p_name = '' OR octet_length(p_name) > 1000 THEN
        RAISE EXCEPTION 'a flow rule''s name must be a non-empty text of at most 1000 bytes'
            USING ERRCODE = '22023';
    ELSIF p_action = 'set limit' AND (p_max_running IS NULL OR p_max_running < 1
                                      OR p_max_running > 1000000) THEN
        RAISE EXCEPTION 'max_running must be a whole number from 1 to 1000000 (got %)',
            coalesce(p_max_running::text, 'NULL') USING ERRCODE = '22023';
    ELSIF octet_length(p_reason) > 2000 THEN
        RAISE EXCEPTION 'a reason must be at most 2000 bytes' USING ERRCODE = '22023';
    ELSIF p_action IS NULL OR p_action NOT IN ('pause', 'resume', 'set limit', 'remove limit') THEN
        RAISE EXCEPTION 'unknown flow rule action %', coalesce(quote_literal(p_action), 'NULL')
            USING ERRCODE = '22023';
    END IF;

    -- Changes of one key one at a time (its row may not exist yet). Fetches
    -- only try this lock: one that meets it skips the key for that call.
    PERFORM pg_advisory_xact_lock(__SCHEMA__.taskhub_flow_lock_key(p_kind, p_name));
    SELECT r.paused, r.max_running INTO out_paused_before, out_max_running_before
      FROM __SCHEMA__.taskhub_flow_rules AS r
     WHERE r.kind = p_kind AND r.name = p_name;

    v_paused := CASE p_action WHEN 'pause' THEN true
                              WHEN 'resume' THEN false
                              ELSE coalesce(out_paused_before, false) END;
    v_max_running := CASE p_action WHEN 'set limit' THEN p_max_running
                                   WHEN 'remove limit' THEN NULL
                                   ELSE out_max_running_before END;
    IF v_paused OR v_max_running IS NOT NULL THEN
        INSERT INTO __SCHEMA__.taskhub_flow_rules AS r
               (kind, name, paused, max_running, changed_at, changed_by, reason)
        VALUES (p_kind, p_name, v_paused, v_max_running, v_now, session_user, p_reason)
        ON CONFLICT (kind, name) DO UPDATE
           SET paused      = EXCLUDED.paused,
               max_running = EXCLUDED.max_running,
               changed_at  = EXCLUDED.changed_at,
               changed_by  = EXCLUDED.changed_by,
               reason      = EXCLUDED.reason;
    ELSE
        DELETE FROM __SCHEMA__.taskhub_flow_rules AS r
         WHERE r.kind = p_kind AND r.name = p_name;
    END IF;

    v_id := nextval('__SCHEMA__.taskhub_flow_changes_id_seq');
    INSERT INTO __SCHEMA__.taskhub_flow_changes
           (id, changed_at, changed_by, kind, name, action, paused_before, paused_after,
            max_running_before, max_running_after, reason)
    VALUES (v_id, v_now, session_user, p_kind, p_name, p_action,
            coalesce(out_paused_before, false), v_paused,
            out_max_running_before, v_max_running, p_reason);
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_change_flow_rule(text, text, text, integer, text) FROM PUBLIC;
