-- Every lookup of a lease's messages goes by instance (taskhub_orch_instance_idx):
-- without an index on lock_token, the fetch's lease tag is a HOT update (no
-- index entry written). One statement: Citus sends a DROP INDEX's whole text
-- to the workers.
DROP INDEX IF EXISTS __SCHEMA__.taskhub_orch_lock_idx;
