-- taskhub-pg 0021, downgrade: the server's autovacuum defaults on worker_queue
-- again (one statement per file, as Citus needs).
ALTER TABLE __SCHEMA__.worker_queue RESET (
    autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay
);
