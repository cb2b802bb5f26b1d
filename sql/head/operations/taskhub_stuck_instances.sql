-- Times are read from the database clock; *_ms columns are milliseconds.
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
