-- The instance an orchestrator-queue item is addressed to: sub-orchestration
-- completions go to the parent, everything else to its own instance.
CREATE FUNCTION __SCHEMA__.taskhub_target_instance(p_item jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN p_item ? 'SubOrchCompleted' OR p_item ? 'SubOrchFailed'
                THEN pg_catalog.jsonb_path_query_first(p_item, '$.*.parent_instance')
                ELSE pg_catalog.jsonb_path_query_first(p_item, '$.*.instance')
           END #>> '{}'
$$;

