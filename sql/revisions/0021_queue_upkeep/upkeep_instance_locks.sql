-- taskhub-pg 0021: instance_locks vacuumed by dead rows, never throttled (see
-- upkeep_orchestrator_queue.sql).
ALTER TABLE __SCHEMA__.instance_locks SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0
);
