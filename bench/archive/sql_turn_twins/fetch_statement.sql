WITH clock AS MATERIALIZED (
    SELECT __SCHEMA__.taskhub_clock_ms(p_now_ms) AS ms
),
-- The oldest visible message of an instance with no live lease.
candidate AS MATERIALIZED (
    SELECT q.instance_id
      FROM __SCHEMA__.orchestrator_queue AS q, clock AS c
     WHERE q.visible_at <= to_timestamp(c.ms / 1000.0)
       AND (q.lock_token IS NULL OR q.locked_until <= c.ms)
       AND NOT EXISTS (SELECT 1
                         FROM __SCHEMA__.instance_locks AS il
                        WHERE il.instance_id = q.instance_id
                          AND il.locked_until > c.ms)
     ORDER BY q.visible_at, q.id
     LIMIT 1
),
claimed AS MATERIALIZED (
    SELECT d.instance_id, 'lock_' || gen_random_uuid() AS token
      FROM candidate AS d
     WHERE pg_try_advisory_xact_lock(__SCHEMA__.taskhub_instance_lock_key(d.instance_id))
),
messages AS MATERIALIZED (
    SELECT q.id, q.work_item, q.attempt_count
      FROM __SCHEMA__.orchestrator_queue AS q, claimed AS m, clock AS c
     WHERE q.instance_id = m.instance_id
       AND q.visible_at <= to_timestamp(c.ms / 1000.0)
       AND (q.lock_token IS NULL OR q.locked_until <= c.ms)
     ORDER BY q.id
       FOR UPDATE OF q SKIP LOCKED
),
lease AS (
    INSERT INTO __SCHEMA__.instance_locks AS il (instance_id, lock_token, locked_until, locked_at)
    SELECT m.instance_id, m.token,
           __SCHEMA__.taskhub_clock_ms(p_now_ms) + p_lock_timeout_ms,
           __SCHEMA__.taskhub_clock_ms(NULL)
      FROM claimed AS m
     WHERE EXISTS (SELECT 1 FROM messages)
    ON CONFLICT (instance_id) DO UPDATE
       SET lock_token   = EXCLUDED.lock_token,
           locked_until = EXCLUDED.locked_until,
           locked_at    = EXCLUDED.locked_at
    RETURNING il.instance_id, il.lock_token, il.locked_until
),
marked AS (
    UPDATE __SCHEMA__.orchestrator_queue AS q
       SET lock_token    = l.lock_token,
           locked_until  = l.locked_until,
           attempt_count = q.attempt_count + 1
      FROM lease AS l, messages AS g
     WHERE q.instance_id = l.instance_id AND q.id = g.id
)
SELECT l.instance_id,
       i.orchestration_name,
       coalesce(i.orchestration_version, 'unknown'),
       coalesce(i.current_execution_id, 1),
       coalesce((SELECT '[' || string_agg(h.event_data, ',' ORDER BY h.event_id) || ']'
                   FROM __SCHEMA__.history AS h
                  WHERE h.instance_id = l.instance_id
                    AND h.execution_id = coalesce(i.current_execution_id, 1)), '[]')::json,
       (SELECT '[' || string_agg(g.work_item, ',' ORDER BY g.id) || ']' FROM messages AS g)::json,
       l.lock_token,
       (SELECT max(g.attempt_count) + 1 FROM messages AS g)::integer,
       (SELECT coalesce(jsonb_object_agg(s.key, jsonb_build_object(
                   'value', s.value, 'last_updated_at_ms', s.last_updated_at_ms)), '{}')
          FROM __SCHEMA__.kv_store AS s
         WHERE s.instance_id = l.instance_id)::json
  FROM lease AS l
  LEFT JOIN __SCHEMA__.instances AS i ON i.instance_id = l.instance_id
