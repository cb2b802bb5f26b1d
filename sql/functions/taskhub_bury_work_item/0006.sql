-- Move one worker item that was handed out p_cap times without an ack to
-- dead_letters, with the reason. The caller holds its row lock. (Internal
-- helper, off the hot path.)
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_bury_work_item(p_id bigint, p_cap integer)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO __SCHEMA__.dead_letters
           (source_queue, original_id, instance_id, work_item, attempt_count, reason,
            original_created_at, execution_id, activity_id, session_id, tag)
    SELECT 'worker', q.id, q.instance_id, q.work_item, q.attempt_count,
           format('handed out %s times without an ack (dead_letter_after_attempts = %s)',
                  q.attempt_count, p_cap),
           q.created_at, q.execution_id, q.activity_id, q.session_id, q.tag
      FROM __SCHEMA__.worker_queue AS q
     WHERE q.id = p_id;
    DELETE FROM __SCHEMA__.worker_queue AS q WHERE q.id = p_id;
END;
$$;
