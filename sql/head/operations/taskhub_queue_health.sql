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
