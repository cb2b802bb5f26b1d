-- Autovacuum for the tables every turn and activity churns: a queue row is
-- inserted, tagged by its lease and deleted, a lease row inserted and deleted,
-- all within seconds, so these tables hold few live rows and many dead ones.
--
-- * By dead rows, not by size: by default autovacuum waits for 20 % of the
--   table to be dead. A queue holding a backlog (timers a day ahead, work for
--   a tag nobody serves yet) would then churn through many times its steady
--   size before a vacuum, and its indexes bloat with it; here 1,000 dead rows
--   plus 2 % of the live ones call for one at every autovacuum round.
-- * Never throttled: their pages are hot in shared buffers, so a vacuum costs
--   page hits, and a throttled one only lets the dead rows pile up.
--
-- SET of storage parameters takes SHARE UPDATE EXCLUSIVE, which the runtime's
-- own locks do not conflict with; the revision locks the tables up front all
-- the same (provider/deploy/table_locks.py). In sql/head/ each table's file
-- carries its own. One statement per file: Citus sends the text of a DDL on
-- a distributed table to its workers whole, and they refuse more than one
-- command.
ALTER TABLE __SCHEMA__.orchestrator_queue SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0
);
