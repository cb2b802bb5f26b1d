-- Times are read from the database clock; *_ms columns are milliseconds.
-- Messages handed out more often than the runtime's default max_attempts
-- (10): the runtime should be failing them; if the count keeps climbing, its
-- ack is failing (see the seed report) and dead_letters will take them.
CREATE VIEW __SCHEMA__.taskhub_poison_candidates AS
SELECT 'orchestrator' AS queue, q.id, q.instance_id, q.attempt_count, q.lock_token,
       q.created_at, left(q.work_item, 200) AS work_item_head
  FROM __SCHEMA__.orchestrator_queue AS q
 WHERE q.attempt_count > 10
UNION ALL
SELECT 'worker', q.id, q.instance_id, q.attempt_count, q.lock_token, q.created_at,
       left(q.work_item, 200)
  FROM __SCHEMA__.worker_queue AS q
 WHERE q.attempt_count > 10;
