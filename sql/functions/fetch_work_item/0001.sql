-- Lease the oldest visible worker item that this worker may run.
--
--   * Tags: p_tag_mode 'default_only' (untagged items), 'tags' (tag in
--     p_tag_filter), 'default_and' (either), 'any', or 'none' (nothing).
--   * Sessions: without p_owner_id only items outside sessions are eligible.
--     With it, also items of sessions this owner holds, or that nobody holds
--     live; claiming such an item claims (or extends) the session for the owner.
--   * Never waits: queue rows are taken with SKIP LOCKED and a session is
--     claimed with pg_try_advisory_xact_lock; a contended session is skipped
--     and the next eligible item is tried, up to c_max_candidates items.
--   * The lease is computed from the clock read after the row lock.
--   * An item handed out dead_letter_after_attempts times without an ack is
--     moved to dead_letters instead of being handed out again.
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
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c_max_candidates constant integer := 8;
    v_mode          text    := coalesce(p_tag_mode, 'default_only');
    v_untagged      boolean;
    v_tagged        boolean;
    v_scan_ms       bigint;
    v_now_ms        bigint;
    v_id            bigint;
    v_session       text;
    v_skip_sessions text[]  := '{}';
    v_owner         text;
    v_owner_until   bigint;
    v_token         text;
    v_attempts      integer;
BEGIN
    IF p_lock_timeout_ms IS NULL OR p_lock_timeout_ms <= 0 THEN
        RAISE EXCEPTION 'p_lock_timeout_ms must be positive' USING ERRCODE = '22023';
    ELSIF p_session_lock_timeout_ms <= 0 THEN
        RAISE EXCEPTION 'p_session_lock_timeout_ms must be NULL or positive' USING ERRCODE = '22023';
    ELSIF p_owner_id = '' THEN
        RAISE EXCEPTION 'p_owner_id must be NULL or non-empty' USING ERRCODE = '22023';
    ELSIF v_mode NOT IN ('default_only', 'tags', 'default_and', 'any', 'none') THEN
        RAISE EXCEPTION 'p_tag_mode must be one of default_only, tags, default_and, any, none (got %)',
            quote_literal(p_tag_mode) USING ERRCODE = '22023';
    END IF;
    IF v_mode = 'none' THEN
        RETURN;
    END IF;
    v_untagged := v_mode IN ('default_only', 'default_and', 'any');
    v_tagged   := v_mode IN ('tags', 'default_and', 'any');

    FOR v_attempt IN 1 .. c_max_candidates LOOP
        v_scan_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);

        SELECT q.id, q.session_id, q.attempt_count INTO v_id, v_session, v_attempts
          FROM __SCHEMA__.worker_queue AS q
         WHERE q.visible_at <= to_timestamp(v_scan_ms / 1000.0)
           AND (q.lock_token IS NULL OR q.locked_until <= v_scan_ms)
           AND CASE WHEN q.tag IS NULL THEN v_untagged
                    ELSE v_tagged AND (v_mode = 'any' OR q.tag = ANY (p_tag_filter)) END
           AND (q.session_id IS NULL
                OR (p_owner_id IS NOT NULL
                    AND NOT q.session_id = ANY (v_skip_sessions)
                    AND NOT EXISTS (SELECT 1
                                      FROM __SCHEMA__.sessions AS s
                                     WHERE s.session_id = q.session_id
                                       AND s.locked_until > v_scan_ms
                                       AND s.worker_id <> p_owner_id)))
         ORDER BY q.id
         LIMIT 1
           FOR UPDATE OF q SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;

        v_now_ms := __SCHEMA__.taskhub_clock_ms(p_now_ms);

        -- Handed out too often without an ack: to dead_letters, never again.
        -- (The setting is only read for items fetched before.)
        IF v_attempts > 0 AND v_attempts >= __SCHEMA__.taskhub_dead_letter_cap() THEN
            WITH buried AS (
                DELETE FROM __SCHEMA__.worker_queue AS q WHERE q.id = v_id RETURNING q.*
            )
            INSERT INTO __SCHEMA__.dead_letters
                   (source_queue, original_id, instance_id, work_item, attempt_count, reason,
                    original_created_at, execution_id, activity_id, session_id, tag)
            SELECT 'worker', b.id, b.instance_id, b.work_item, b.attempt_count,
                   format('handed out %s times without an ack (dead_letter_after_attempts = %s)',
                          b.attempt_count, __SCHEMA__.taskhub_dead_letter_cap()),
                   b.created_at, b.execution_id, b.activity_id, b.session_id, b.tag
              FROM buried AS b;
            CONTINUE;
        END IF;

        IF v_session IS NOT NULL THEN
            -- Claim the session without waiting: another fetcher claiming it
            -- right now, or a session row busy elsewhere, means try another item.
            IF NOT pg_try_advisory_xact_lock(__SCHEMA__.taskhub_session_lock_key(v_session)) THEN
                v_skip_sessions := v_skip_sessions || v_session;
                CONTINUE;
            END IF;
            SELECT s.worker_id, s.locked_until INTO v_owner, v_owner_until
              FROM __SCHEMA__.sessions AS s
             WHERE s.session_id = v_session
               FOR UPDATE SKIP LOCKED;
            IF FOUND THEN
                IF v_owner <> p_owner_id AND v_owner_until > v_now_ms THEN
                    v_skip_sessions := v_skip_sessions || v_session;
                    CONTINUE;
                END IF;
                UPDATE __SCHEMA__.sessions AS s
                   SET worker_id        = p_owner_id,
                       locked_until     = v_now_ms + coalesce(p_session_lock_timeout_ms, p_lock_timeout_ms),
                       last_activity_at = v_now_ms
                 WHERE s.session_id = v_session;
            ELSIF EXISTS (SELECT 1 FROM __SCHEMA__.sessions AS s WHERE s.session_id = v_session) THEN
                v_skip_sessions := v_skip_sessions || v_session;
                CONTINUE;
            ELSE
                INSERT INTO __SCHEMA__.sessions (session_id, worker_id, locked_until, last_activity_at)
                VALUES (v_session, p_owner_id,
                        v_now_ms + coalesce(p_session_lock_timeout_ms, p_lock_timeout_ms), v_now_ms);
            END IF;
        END IF;

        v_token := 'lock_' || gen_random_uuid();
        RETURN QUERY
            UPDATE __SCHEMA__.worker_queue AS q
               SET lock_token    = v_token,
                   locked_until  = v_now_ms + p_lock_timeout_ms,
                   attempt_count = q.attempt_count + 1
             WHERE q.id = v_id
            RETURNING q.work_item, q.lock_token, q.attempt_count;
        RETURN;
    END LOOP;
END;
$$;
