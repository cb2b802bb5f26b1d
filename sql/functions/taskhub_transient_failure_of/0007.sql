-- If the turn p_history records the provider's own transient failure (an
-- OrchestrationFailed event with Infrastructure details, a provider
-- operation and a message naming a transient condition), that failure.
-- Application, poison and configuration failures, and other infrastructure
-- failures, give no row. Called by ack_orchestration_item for failed turns only.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_transient_failure_of(p_history jsonb)
RETURNS TABLE (operation text, message text, condition text)
LANGUAGE sql IMMUTABLE
AS $$
    SELECT failure.operation, failure.message, classified.condition
      FROM jsonb_array_elements(p_history) AS e,
           LATERAL (SELECT __SCHEMA__.taskhub_try_jsonb(e ->> 'event_data') AS data) AS event,
           LATERAL (SELECT event.data -> 'details' -> 'Infrastructure' ->> 'operation' AS operation,
                           event.data -> 'details' -> 'Infrastructure' ->> 'message' AS message)
                   AS failure,
           LATERAL (SELECT __SCHEMA__.taskhub_transient_condition(failure.message) AS condition)
                   AS classified
     WHERE event.data ->> 'type' = 'OrchestrationFailed'
       AND failure.operation = ANY (__SCHEMA__.taskhub_provider_operations())
       AND classified.condition IS NOT NULL
     LIMIT 1
$$;

