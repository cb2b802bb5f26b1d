-- Move orchestrator messages that were handed out p_cap times without an ack
-- to dead_letters, with the reason. They are never handed out again. The
-- caller holds their row locks. (Internal helper, off the hot path.)
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_bury_orchestrator_messages(
    p_ids bigint[],
    p_cap integer
)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO __SCHEMA__.dead_letters
           (source_queue, original_id, instance_id, work_item, attempt_count, reason,
            original_created_at)
    SELECT 'orchestrator', q.id, q.instance_id, q.work_item, q.attempt_count,
           format('handed out %s times without an ack (dead_letter_after_attempts = %s)',
                  q.attempt_count, p_cap),
           q.created_at
      FROM __SCHEMA__.orchestrator_queue AS q
     WHERE q.id = ANY (p_ids);
    DELETE FROM __SCHEMA__.orchestrator_queue AS q WHERE q.id = ANY (p_ids);
END;
$$;
