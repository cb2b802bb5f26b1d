-- Views for operators: what is queued, who holds what, what is stuck.
-- Times are read from the database clock; *_ms columns are milliseconds.

-- One row per queue: messages ready now, the age of the oldest one, leases
-- held, the highest attempt count, and how many went to dead_letters.
CREATE VIEW __SCHEMA__.taskhub_queue_health AS
WITH clock AS (
    SELECT clock_timestamp() AS now_ts,
           (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms
)
SELECT 'orchestrator' AS queue,
       count(*) FILTER (WHERE q.visible_at <= clock.now_ts
                          AND (q.lock_token IS NULL OR q.locked_until <= clock.now_ms)) AS ready,
       count(*) FILTER (WHERE q.visible_at > clock.now_ts) AS scheduled,
       count(*) FILTER (WHERE q.locked_until > clock.now_ms) AS leased,
       (extract(epoch FROM clock.now_ts - min(q.visible_at) FILTER (
            WHERE q.visible_at <= clock.now_ts)) * 1000)::bigint AS oldest_ready_age_ms,
       coalesce(max(q.attempt_count), 0) AS max_attempt_count,
       (SELECT count(*) FROM __SCHEMA__.dead_letters AS d
         WHERE d.source_queue = 'orchestrator') AS dead_letters
  FROM clock LEFT JOIN __SCHEMA__.orchestrator_queue AS q ON true
 GROUP BY clock.now_ts, clock.now_ms
UNION ALL
SELECT 'worker',
       count(*) FILTER (WHERE q.visible_at <= clock.now_ts
                          AND (q.lock_token IS NULL OR q.locked_until <= clock.now_ms)),
       count(*) FILTER (WHERE q.visible_at > clock.now_ts),
       count(*) FILTER (WHERE q.locked_until > clock.now_ms),
       (extract(epoch FROM clock.now_ts - min(q.visible_at) FILTER (
            WHERE q.visible_at <= clock.now_ts)) * 1000)::bigint,
       coalesce(max(q.attempt_count), 0),
       (SELECT count(*) FROM __SCHEMA__.dead_letters AS d WHERE d.source_queue = 'worker')
  FROM clock LEFT JOIN __SCHEMA__.worker_queue AS q ON true
 GROUP BY clock.now_ts, clock.now_ms;

-- Every lease held right now (live or expired but not yet taken over):
-- which instance or activity, the token, since when and how long is left.
CREATE VIEW __SCHEMA__.taskhub_current_leases AS
WITH clock AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms)
SELECT 'orchestration' AS kind, il.instance_id, NULL::bigint AS activity_id,
       il.lock_token, to_timestamp(il.locked_at / 1000.0) AS leased_since,
       il.locked_until - clock.now_ms AS remaining_ms,
       (SELECT count(*) FROM __SCHEMA__.orchestrator_queue AS q
         WHERE q.lock_token = il.lock_token) AS messages,
       NULL::text AS session_id
  FROM __SCHEMA__.instance_locks AS il, clock
UNION ALL
SELECT 'activity', q.instance_id, q.activity_id, q.lock_token, NULL::timestamptz,
       q.locked_until - clock.now_ms, 1, q.session_id
  FROM __SCHEMA__.worker_queue AS q, clock
 WHERE q.lock_token IS NOT NULL;

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

-- Sessions, their owners, how long the lease has left, how long they have
-- been idle, and how many items wait for them.
CREATE VIEW __SCHEMA__.taskhub_session_owners AS
WITH clock AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms)
SELECT s.session_id, s.worker_id AS owner, s.locked_until - clock.now_ms AS remaining_ms,
       clock.now_ms - s.last_activity_at AS idle_ms,
       (SELECT count(*) FROM __SCHEMA__.worker_queue AS q
         WHERE q.session_id = s.session_id) AS pending_items
  FROM __SCHEMA__.sessions AS s, clock;

-- Instances whose current execution is Running but that have nothing queued,
-- nothing scheduled and no lease: only an external event can move them (or
-- nothing will).
CREATE VIEW __SCHEMA__.taskhub_stuck_instances AS
SELECT i.instance_id, i.orchestration_name, i.current_execution_id, i.updated_at,
       now() - i.updated_at AS quiet_for
  FROM __SCHEMA__.instances AS i
  JOIN __SCHEMA__.executions AS e
    ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
 WHERE e.status = 'Running'
   AND NOT EXISTS (SELECT 1 FROM __SCHEMA__.orchestrator_queue AS q
                    WHERE q.instance_id = i.instance_id)
   AND NOT EXISTS (SELECT 1 FROM __SCHEMA__.worker_queue AS w
                    WHERE w.instance_id = i.instance_id)
   AND NOT EXISTS (SELECT 1 FROM __SCHEMA__.instance_locks AS il
                    WHERE il.instance_id = i.instance_id);
