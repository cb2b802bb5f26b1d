-- A slot of a label's or an orchestration's limit for a turn (kind
-- 'turn:label', 'turn:label_each' or 'turn:orchestration', name the label
-- or the orchestration's name): claimed for the lease p_token, which
-- fetch_orchestration_item is about to write, under the key's advisory lock
-- its caller holds, and the rule's guard, taken here shared without waiting
-- (a change of the rule holds it). The limit is read again under the guard.
-- Returns the slot, or NULL when the limit is reached (or the rule is being
-- changed).
--
-- A turn's slot is held while an instance lease (instance_locks) has its
-- token and is live by the server's clock: an ack or an abandon (the lease
-- row goes) or a lease that ends unrenewed frees it, a renewal keeps it,
-- with no write here. Slots are made one at a time, by the claims that
-- need one more; a slot held beyond a lowered limit takes one of the
-- limit's (as in fetch_work_item).
CREATE FUNCTION __SCHEMA__.taskhub_claim_turn_slot(
    p_kind      text,
    p_name      text,
    p_token     text,
    p_server_ms bigint
)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET enable_bitmapscan = off
SET jit = off
AS $$
DECLARE
    v_slots   integer[];
    v_tokens  text[];
    v_live    text[];
    v_free    integer[] := '{}';
    v_beyond  integer := 0;  -- slots beyond the limit still held
    v_slot    integer;
    v_rule    text := substr(p_kind, 6);  -- label, label_each or orchestration
    v_limit   integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock_shared(__SCHEMA__.taskhub_flow_lock_key(
               'guard:' || v_rule,
               CASE WHEN v_rule = 'label_each' THEN split_part(p_name, '=', 1) ELSE p_name END)) THEN
        RETURN NULL;
    END IF;
    SELECT r.max_running INTO v_limit
      FROM __SCHEMA__.taskhub_flow_rules AS r
     WHERE r.kind = v_rule
       AND r.name = CASE WHEN v_rule = 'label_each' THEN split_part(p_name, '=', 1) ELSE p_name END
       AND NOT r.paused;
    IF v_limit IS NULL THEN
        RETURN 0;  -- no limit any more: nothing to hold
    END IF;
    -- One table a statement (Citus): the key's slots, then which of their
    -- tokens a live lease has.
    SELECT coalesce(array_agg(f.slot ORDER BY f.slot), '{}'),
           coalesce(array_agg(f.lock_token ORDER BY f.slot), '{}')
      INTO v_slots, v_tokens
      FROM __SCHEMA__.taskhub_flow_slots AS f
     WHERE f.kind = p_kind AND f.name = p_name;
    SELECT coalesce(array_agg(il.lock_token), '{}') INTO v_live
      FROM __SCHEMA__.instance_locks AS il
     WHERE il.lock_token = ANY (v_tokens)
       AND il.locked_until > p_server_ms;
    FOR v_n IN 1 .. cardinality(v_slots) LOOP
        IF v_tokens[v_n] IS NOT NULL AND v_tokens[v_n] = ANY (v_live) THEN
            IF v_slots[v_n] > v_limit THEN
                v_beyond := v_beyond + 1;
            END IF;
        ELSIF v_slots[v_n] <= v_limit THEN
            v_free := v_free || v_slots[v_n];
        END IF;
    END LOOP;
    IF cardinality(v_free) > v_beyond THEN
        -- With B held beyond the limit, the (B+1)th free one: never more
        -- than the limit held.
        v_slot := v_free[v_beyond + 1];
        UPDATE __SCHEMA__.taskhub_flow_slots AS s
           SET item_id = NULL, lock_token = p_token
         WHERE s.kind = p_kind AND s.name = p_name AND s.slot = v_slot;
        -- Gone: a change of the rule removed it (free) since it was read.
        RETURN CASE WHEN FOUND THEN v_slot END;
    END IF;
    -- None free: one more, while fewer are made than the limit less those
    -- held beyond it: the lowest number missing.
    IF (SELECT count(*) FROM unnest(v_slots) AS n WHERE n <= v_limit) + v_beyond >= v_limit
       OR cardinality(v_free) > 0 THEN
        RETURN NULL;
    END IF;
    v_slot := (SELECT min(n) FROM generate_series(1, v_limit) AS n WHERE NOT n = ANY (v_slots));
    INSERT INTO __SCHEMA__.taskhub_flow_slots AS f (kind, name, slot, item_id, lock_token)
    VALUES (p_kind, p_name, v_slot, NULL, p_token)
    ON CONFLICT (kind, name, slot) DO NOTHING;
    RETURN CASE WHEN FOUND THEN v_slot END;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_claim_turn_slot(text, text, text, bigint) FROM PUBLIC;
