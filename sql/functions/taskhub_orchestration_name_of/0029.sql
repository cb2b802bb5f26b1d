-- The orchestration a work item starts (a StartOrchestration's or a
-- ContinueAsNew's name), else NULL: what the writers of orchestrator_queue
-- put in taskhub_orchestration, for the flow rules by orchestration.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_orchestration_name_of(p_item jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT coalesce(p_item -> 'StartOrchestration' ->> 'orchestration',
                    p_item -> 'ContinueAsNew' ->> 'orchestration')
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_orchestration_name_of(jsonb) FROM PUBLIC;
