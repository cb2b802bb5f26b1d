-- Times are read from the database clock; *_ms columns are milliseconds.
-- Sessions, their owners, how long the lease has left, how long they have
-- been idle, and how many items wait for them.
CREATE VIEW __SCHEMA__.taskhub_session_owners AS
WITH clock AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms)
SELECT s.session_id, s.worker_id AS owner, s.locked_until - clock.now_ms AS remaining_ms,
       clock.now_ms - s.last_activity_at AS idle_ms,
       (SELECT count(*) FROM __SCHEMA__.worker_queue AS q
         WHERE q.session_id = s.session_id) AS pending_items
  FROM __SCHEMA__.sessions AS s, clock;
