-- Instances matching every filter given (NULL: any), newest first, a page at
-- a time: pass the last instance_id of a page as p_after_instance_id for the
-- next. The dashboard's search: p_id_prefix matches the start of the instance
-- id, p_name_contains any part of the orchestration's name (either case);
-- p_orchestration_name and p_instance_id match exactly. Besides the started instances it finds those known only by their
-- queued messages (status 'Pending'): a start no runtime has taken yet, or
-- one whose orchestration no runtime has registered (its max_attempt_count
-- grows). Times are the instance's first start and its last change; for a
-- pending instance, its first and last queued message. A search walks the
-- instances newest first until it has a page: a prefix or a name part that
-- matches nothing reads every instance once (no index serves a prefix under
-- every collation), so the dashboard asks for one page at a time.
--
-- A pending start is never parsed whole to be listed: its input may be
-- megabytes, and reading any of a compressed value past its start costs the
-- whole of it. The orchestration's name is read from the first 4 KB, where
-- the runtime writes it (instance, then orchestration, then the input), by a
-- pattern anchored at the start (a bare quote in JSON text is always a
-- delimiter); a start written otherwise is parsed whole. The version comes
-- after the input: it is read for the page's rows only, and only from a
-- start of at most 64 KB (else NULL here; the instance's own page reads it).
CREATE FUNCTION __SCHEMA__.taskhub_search_instances(
    p_status             text        DEFAULT NULL,
    p_orchestration_name text        DEFAULT NULL,
    p_started_after      timestamptz DEFAULT NULL,
    p_started_before     timestamptz DEFAULT NULL,
    p_updated_after      timestamptz DEFAULT NULL,
    p_updated_before     timestamptz DEFAULT NULL,
    p_after_instance_id  text        DEFAULT NULL,
    p_limit              integer     DEFAULT 100,
    p_instance_id        text        DEFAULT NULL,
    p_id_prefix          text        DEFAULT NULL,
    p_name_contains      text        DEFAULT NULL
)
RETURNS TABLE (
    instance_id           text,
    orchestration_name    text,
    orchestration_version text,
    status                text,
    current_execution_id  bigint,
    created_at            timestamptz,
    updated_at            timestamptz,
    parent_instance_id    text,
    queued_messages       bigint,
    max_attempt_count     integer
)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Each call is planned with its own filters: the ones left NULL drop out,
-- and a page is an index range scan of taskhub_instances_created_idx.
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
DECLARE
    v_after_at timestamptz;
BEGIN
    IF p_status IS NOT NULL
       AND p_status NOT IN ('Running', 'Completed', 'Failed', 'ContinuedAsNew', 'Pending') THEN
        RAISE EXCEPTION 'p_status must be Running, Completed, Failed, ContinuedAsNew or Pending, not %',
                        p_status
              USING ERRCODE = '22023';
    ELSIF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'p_limit must be between 1 and 10000, not %', coalesce(p_limit::text, 'NULL')
              USING ERRCODE = '22023';
    END IF;
    IF p_after_instance_id IS NOT NULL THEN
        SELECT i.created_at INTO v_after_at
          FROM __SCHEMA__.instances AS i WHERE i.instance_id = p_after_instance_id;
        IF NOT FOUND THEN
            SELECT min(q.created_at) INTO v_after_at
              FROM __SCHEMA__.orchestrator_queue AS q WHERE q.instance_id = p_after_instance_id;
        END IF;
        IF v_after_at IS NULL THEN
            RAISE EXCEPTION 'no instance % to continue after', p_after_instance_id
                  USING ERRCODE = '22023';
        END IF;
    END IF;

    RETURN QUERY
    WITH started AS (
        SELECT i.instance_id, i.orchestration_name, i.orchestration_version, e.status,
               i.current_execution_id, i.created_at, i.updated_at, i.parent_instance_id
          FROM __SCHEMA__.instances AS i
          LEFT JOIN __SCHEMA__.executions AS e
            ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
         WHERE (p_instance_id IS NULL OR i.instance_id = p_instance_id)
           AND (p_status IS NULL OR e.status = p_status)
           AND (p_id_prefix IS NULL OR starts_with(i.instance_id, p_id_prefix))
           AND (p_orchestration_name IS NULL OR i.orchestration_name = p_orchestration_name)
           AND (p_name_contains IS NULL
                OR strpos(lower(i.orchestration_name), lower(p_name_contains)) > 0)
           AND (p_started_after IS NULL OR i.created_at >= p_started_after)
           AND (p_started_before IS NULL OR i.created_at < p_started_before)
           AND (p_updated_after IS NULL OR i.updated_at >= p_updated_after)
           AND (p_updated_before IS NULL OR i.updated_at < p_updated_before)
           AND (v_after_at IS NULL OR (i.created_at, i.instance_id) < (v_after_at, p_after_instance_id))
         ORDER BY i.created_at DESC, i.instance_id DESC
         LIMIT p_limit
    ),
    -- Known only by queued messages; the start names the orchestration.
    pending AS (
        SELECT q.instance_id,
               max(CASE WHEN left(q.work_item, 22) = '{"StartOrchestration":'
                        THEN coalesce(
                                 ('"' || (regexp_match(
                                              left(q.work_item, 4096),
                                              '^\{\s*"StartOrchestration"\s*:\s*\{\s*"instance"\s*:\s*'
                                              '"(?:[^"\\]|\\.)*"\s*,\s*"orchestration"\s*:\s*'
                                              '"((?:[^"\\]|\\.)*)"'))[1]
                                  || '"')::jsonb #>> '{}',
                                 __SCHEMA__.taskhub_try_jsonb(q.work_item)
                                     -> 'StartOrchestration' ->> 'orchestration')
                   END) AS orchestration_name,
               min(q.created_at) AS created_at,
               max(q.created_at) AS updated_at
          FROM __SCHEMA__.orchestrator_queue AS q
         WHERE (p_status IS NULL OR p_status = 'Pending')
           AND (p_instance_id IS NULL OR q.instance_id = p_instance_id)
           AND (p_id_prefix IS NULL OR starts_with(q.instance_id, p_id_prefix))
           AND NOT EXISTS (SELECT 1 FROM __SCHEMA__.instances AS i
                            WHERE i.instance_id = q.instance_id)
         GROUP BY q.instance_id
    ),
    pending_matching AS (
        SELECT p.instance_id, p.orchestration_name, NULL::text, 'Pending'::text,
               NULL::bigint, p.created_at, p.updated_at, NULL::text
          FROM pending AS p
         WHERE (p_orchestration_name IS NULL OR p.orchestration_name = p_orchestration_name)
           AND (p_name_contains IS NULL
                OR strpos(lower(p.orchestration_name), lower(p_name_contains)) > 0)
           AND (p_started_after IS NULL OR p.created_at >= p_started_after)
           AND (p_started_before IS NULL OR p.created_at < p_started_before)
           AND (p_updated_after IS NULL OR p.updated_at >= p_updated_after)
           AND (p_updated_before IS NULL OR p.updated_at < p_updated_before)
           AND (v_after_at IS NULL OR (p.created_at, p.instance_id) < (v_after_at, p_after_instance_id))
    ),
    page AS (
        SELECT * FROM started
        UNION ALL
        SELECT * FROM pending_matching
        ORDER BY 6 DESC, 1 DESC
        LIMIT p_limit
    )
    SELECT f.instance_id, f.orchestration_name,
           CASE WHEN f.status = 'Pending' THEN m.start_version ELSE f.orchestration_version END,
           f.status,
           f.current_execution_id, f.created_at, f.updated_at, f.parent_instance_id,
           m.messages, m.max_attempt_count
      FROM page AS f
     CROSS JOIN LATERAL (
            SELECT count(*) AS messages, max(q.attempt_count) AS max_attempt_count,
                   max(CASE WHEN f.status = 'Pending'
                             AND left(q.work_item, 22) = '{"StartOrchestration":'
                             AND octet_length(q.work_item) <= 65536
                            THEN __SCHEMA__.taskhub_try_jsonb(q.work_item)
                                     -> 'StartOrchestration' ->> 'version' END) AS start_version
              FROM __SCHEMA__.orchestrator_queue AS q
             WHERE q.instance_id = f.instance_id) AS m
     ORDER BY f.created_at DESC, f.instance_id DESC;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_search_instances(text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, integer, text, text, text) FROM PUBLIC;
