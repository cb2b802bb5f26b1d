-- Times are read from the database clock; *_ms columns are milliseconds.
-- Every lease held right now (live or expired but not yet taken over):
-- which instance or activity, the token, since when and how long is left.
CREATE OR REPLACE VIEW __SCHEMA__.taskhub_current_leases AS
WITH clock AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms)
SELECT 'orchestration' AS kind, il.instance_id, NULL::bigint AS activity_id,
       il.lock_token, to_timestamp(il.locked_at / 1000.0) AS leased_since,
       il.locked_until - clock.now_ms AS remaining_ms,
       (SELECT count(*) FROM __SCHEMA__.orchestrator_queue AS q
         WHERE q.instance_id = il.instance_id AND q.lock_token = il.lock_token) AS messages,
       NULL::text AS session_id
  FROM __SCHEMA__.instance_locks AS il, clock
UNION ALL
SELECT 'activity', q.instance_id, q.activity_id, q.lock_token, NULL::timestamptz,
       q.locked_until - clock.now_ms, 1, q.session_id
  FROM __SCHEMA__.worker_queue AS q, clock
 WHERE q.lock_token IS NOT NULL;
