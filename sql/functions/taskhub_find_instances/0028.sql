-- Instances matching every filter given (NULL: any), newest first, a page at
-- a time: pass the last instance_id of a page as p_after_instance_id for the
-- next. Besides the started instances it finds those known only by their
-- queued messages (status 'Pending'): a start no runtime has taken yet, or
-- one whose orchestration no runtime has registered (its max_attempt_count
-- grows). Times are the instance's first start and its last change; for a
-- pending instance, its first and last queued message. p_instance_id finds
-- one instance (at most one row). Since revision 0028 the search itself is
-- taskhub_search_instances, which also matches by prefix and name part.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_find_instances(
    p_status             text        DEFAULT NULL,
    p_orchestration_name text        DEFAULT NULL,
    p_started_after      timestamptz DEFAULT NULL,
    p_started_before     timestamptz DEFAULT NULL,
    p_updated_after      timestamptz DEFAULT NULL,
    p_updated_before     timestamptz DEFAULT NULL,
    p_after_instance_id  text        DEFAULT NULL,
    p_limit              integer     DEFAULT 100,
    p_instance_id        text        DEFAULT NULL
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
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_custom_plan
AS $$
    SELECT *
      FROM __SCHEMA__.taskhub_search_instances(
               p_status             => p_status,
               p_orchestration_name => p_orchestration_name,
               p_started_after      => p_started_after,
               p_started_before     => p_started_before,
               p_updated_after      => p_updated_after,
               p_updated_before     => p_updated_before,
               p_after_instance_id  => p_after_instance_id,
               p_limit              => p_limit,
               p_instance_id        => p_instance_id);
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_find_instances(text, text, timestamptz, timestamptz, timestamptz, timestamptz, text, integer, text) FROM PUBLIC;
