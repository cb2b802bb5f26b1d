-- The leases counted against a concurrency limit (taskhub_flow_rules.
-- max_running): one row per leased item of a limited key, written by the fetch
-- that leased it, with the lease's end. A renewal extends it; an ack or an
-- abandon deletes it; a lease that ends unrenewed (a crashed worker) stops
-- counting at held_until, and its row is deleted by the next fetch that
-- counts the key. Only items whose lock token says so ('lock_<id>_flow_...')
-- have a row, so the calls of a hub without limits never read this table.
CREATE TABLE __SCHEMA__.taskhub_flow_slots (
    item_id    bigint NOT NULL,  -- worker_queue.id
    kind       text   NOT NULL,
    name       text   NOT NULL,
    held_until bigint NOT NULL,  -- epoch ms, the lease's end
    PRIMARY KEY (item_id, kind, name)
);
-- A fetch counts a key's live slots here; nothing else can serve it.
CREATE INDEX taskhub_flow_slots_key_idx
    ON __SCHEMA__.taskhub_flow_slots (kind, name, held_until);
