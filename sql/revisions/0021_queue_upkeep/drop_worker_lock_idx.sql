-- Ack, renew and abandon find a worker item by the id its token names
-- (taskhub_worker_item_of_token): without an index on lock_token, the
-- fetch's lease tag is a HOT update (no entry written in the queue's five
-- indexes per activity). One statement: Citus sends a DROP INDEX's whole
-- text to the workers.
DROP INDEX IF EXISTS __SCHEMA__.taskhub_worker_lock_idx;
