SELECT __SCHEMA__.twin_lease_lost(p_lock_token)
  FROM (SELECT count(*) AS live
          FROM (SELECT 1
                  FROM __SCHEMA__.instance_locks AS il
                 WHERE il.lock_token = p_lock_token
                   AND il.locked_until > __SCHEMA__.taskhub_clock_ms(p_now_ms)
                   FOR UPDATE) AS l) AS c
 WHERE c.live = 0;

UPDATE __SCHEMA__.instances AS i
   SET current_execution_id = greatest(i.current_execution_id, p_execution_id),
       updated_at           = to_timestamp(__SCHEMA__.taskhub_clock_ms(p_now_ms) / 1000.0)
  FROM __SCHEMA__.instance_locks AS il
 WHERE il.lock_token = p_lock_token AND i.instance_id = il.instance_id;

INSERT INTO __SCHEMA__.executions (instance_id, execution_id, status, started_at)
SELECT il.instance_id, p_execution_id, 'Running',
       to_timestamp(__SCHEMA__.taskhub_clock_ms(p_now_ms) / 1000.0)
  FROM __SCHEMA__.instance_locks AS il
 WHERE il.lock_token = p_lock_token
   AND NOT EXISTS (SELECT 1
                     FROM __SCHEMA__.executions AS x
                    WHERE x.instance_id = il.instance_id AND x.execution_id = p_execution_id)
ON CONFLICT (instance_id, execution_id) DO NOTHING;

INSERT INTO __SCHEMA__.history
       (instance_id, execution_id, event_id, event_type, event_data, created_at)
SELECT il.instance_id, p_execution_id, (e ->> 'event_id')::bigint,
       coalesce(e ->> 'event_type', 'Event'), e ->> 'event_data',
       to_timestamp(__SCHEMA__.taskhub_clock_ms(p_now_ms) / 1000.0)
  FROM __SCHEMA__.instance_locks AS il, jsonb_array_elements(p_history_delta) AS e
 WHERE il.lock_token = p_lock_token;

INSERT INTO __SCHEMA__.orchestrator_queue (instance_id, work_item, visible_at, created_at)
SELECT coalesce(__SCHEMA__.taskhub_target_instance(o), il.instance_id), o::text, n.ts, n.ts
  FROM __SCHEMA__.instance_locks AS il,
       (SELECT to_timestamp(__SCHEMA__.taskhub_clock_ms(p_now_ms) / 1000.0) AS ts) AS n,
       jsonb_array_elements(p_orchestrator_items) WITH ORDINALITY AS item (o, pos)
 WHERE il.lock_token = p_lock_token
 ORDER BY pos;

DELETE FROM __SCHEMA__.orchestrator_queue AS q
 USING __SCHEMA__.instance_locks AS il
 WHERE il.lock_token = p_lock_token
   AND q.instance_id = il.instance_id
   AND q.lock_token = p_lock_token;

DELETE FROM __SCHEMA__.instance_locks AS il
 WHERE il.lock_token = p_lock_token;
