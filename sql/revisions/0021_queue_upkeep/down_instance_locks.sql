-- taskhub-pg 0021, downgrade: the server's autovacuum defaults on instance_locks
-- again (one statement per file, as Citus needs).
ALTER TABLE __SCHEMA__.instance_locks RESET (
    autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay
);
