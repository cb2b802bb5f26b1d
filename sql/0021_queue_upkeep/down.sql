-- taskhub-pg 0021, downgrade: the server's autovacuum defaults again.
ALTER TABLE __SCHEMA__.orchestrator_queue RESET (
    autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay
);
ALTER TABLE __SCHEMA__.worker_queue RESET (
    autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay
);
ALTER TABLE __SCHEMA__.instance_locks RESET (
    autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay
);
