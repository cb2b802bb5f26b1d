-- taskhub-pg 0029 down: priorities and labels go (the functions that read
-- them went first); the queues and the leases keep the columns duroxide has.
DELETE FROM __SCHEMA__.taskhub_settings WHERE name = 'priority_aging_ms';
DROP TABLE __SCHEMA__.taskhub_instance_labels;
ALTER TABLE __SCHEMA__.orchestrator_queue
    DROP COLUMN taskhub_priority,
    DROP COLUMN taskhub_labels,
    DROP COLUMN taskhub_orchestration,
    DROP COLUMN taskhub_rank;
ALTER TABLE __SCHEMA__.worker_queue
    DROP COLUMN taskhub_priority,
    DROP COLUMN taskhub_labels,
    DROP COLUMN taskhub_orchestration,
    DROP COLUMN taskhub_rank;
ALTER TABLE __SCHEMA__.instance_locks
    DROP COLUMN taskhub_priority,
    DROP COLUMN taskhub_labels,
    DROP COLUMN taskhub_orchestration;
-- 0028's fetches walk visible_at's indexes (the rank's went with the columns).
CREATE INDEX taskhub_orch_visible_idx ON __SCHEMA__.orchestrator_queue (visible_at, id);
CREATE INDEX taskhub_worker_visible_idx ON __SCHEMA__.worker_queue (visible_at, id);
DROP INDEX __SCHEMA__.taskhub_orch_instance_idx;
CREATE INDEX taskhub_orch_instance_idx ON __SCHEMA__.orchestrator_queue (instance_id, id);
