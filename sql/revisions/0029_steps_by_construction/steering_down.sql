-- taskhub-pg 0029 down: priorities and labels go (the functions that read
-- them went first); the queues and the leases keep the columns duroxide has.
DELETE FROM __SCHEMA__.taskhub_settings WHERE name = 'priority_aging_ms';
DROP TABLE __SCHEMA__.taskhub_instance_labels;
ALTER TABLE __SCHEMA__.orchestrator_queue
    DROP COLUMN taskhub_priority,
    DROP COLUMN taskhub_labels,
    DROP COLUMN taskhub_rank;
ALTER TABLE __SCHEMA__.worker_queue
    DROP COLUMN taskhub_priority,
    DROP COLUMN taskhub_labels,
    DROP COLUMN taskhub_rank;
ALTER TABLE __SCHEMA__.instance_locks
    DROP COLUMN taskhub_priority,
    DROP COLUMN taskhub_labels;
