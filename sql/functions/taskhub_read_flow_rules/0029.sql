-- Every flow rule with its current use: how many of its slots are held by a
-- live lease of an activity (running) and of a turn (turns: a label's limits
-- hold turns too), at the database's clock (for a limit of each value of a
-- label, over all of its values), and the tokens its bucket has now.
-- For `taskhub-pg limit list`, the Client, the dashboard and the metrics.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_read_flow_rules()
RETURNS TABLE (
    kind        text,
    name        text,
    paused      boolean,
    max_running integer,
    running     bigint,
    turns       bigint,
    per_second  double precision,
    burst       integer,
    tokens      double precision,
    changed_at  timestamptz,
    changed_by  text,
    reason      text
)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_now_ms bigint := __SCHEMA__.taskhub_clock_ms(NULL);
    v_rule   record;
BEGIN
    -- Not a call of the hot path: the count reads each slot's holder.
    FOR v_rule IN
        SELECT r.kind, r.name, r.paused, r.max_running, r.per_second, r.burst, r.changed_at,
               r.changed_by, r.reason
          FROM __SCHEMA__.taskhub_flow_rules AS r
         ORDER BY r.kind, r.name
    LOOP
        kind := v_rule.kind;
        name := v_rule.name;
        paused := v_rule.paused;
        max_running := v_rule.max_running;
        per_second := v_rule.per_second;
        burst := v_rule.burst;
        changed_at := v_rule.changed_at;
        changed_by := v_rule.changed_by;
        reason := v_rule.reason;
        -- A slot is held while its item holds the lease written in it.
        SELECT count(*) INTO running
          FROM __SCHEMA__.taskhub_flow_slots AS s
         WHERE s.kind = v_rule.kind
           AND CASE WHEN v_rule.kind = 'label_each'
                    THEN left(s.name, length(v_rule.name) + 1) = v_rule.name || '='
                    ELSE s.name = v_rule.name END
           AND EXISTS (SELECT 1
                         FROM __SCHEMA__.worker_queue AS q
                        WHERE q.id = s.item_id AND q.lock_token = s.lock_token
                          AND q.locked_until > v_now_ms);
        -- A turn's slot is held while an instance lease has its token.
        SELECT count(*) INTO turns
          FROM __SCHEMA__.taskhub_flow_slots AS s
         WHERE s.kind = 'turn:' || v_rule.kind
           AND CASE WHEN v_rule.kind = 'label_each'
                    THEN left(s.name, length(v_rule.name) + 1) = v_rule.name || '='
                    ELSE s.name = v_rule.name END
           AND EXISTS (SELECT 1
                         FROM __SCHEMA__.instance_locks AS il
                        WHERE il.lock_token = s.lock_token
                          AND il.locked_until > v_now_ms);
        -- The bucket as a fetch would find it now.
        SELECT least(b.burst, b.tokens
                              + greatest(0, v_now_ms - b.refilled_at_ms) * b.per_second / 1000.0)
          INTO tokens
          FROM __SCHEMA__.taskhub_flow_buckets AS b
         WHERE b.kind = v_rule.kind AND b.name = v_rule.name;
        IF NOT FOUND THEN
            tokens := NULL;
        END IF;
        RETURN NEXT;
    END LOOP;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_read_flow_rules() FROM PUBLIC;
