-- The slots of each concurrency limit (taskhub_flow_rules.max_running): a
-- limit of N is N rows, made and removed by taskhub_change_flow_rule. A fetch
-- leases an item of a limited activity only with a free slot, which it claims
-- (FOR UPDATE SKIP LOCKED: never waiting) and holds until the lease's end, so
-- more than N leases at once cannot be: there are no more rows. A renewal
-- extends it; an ack or an abandon frees it; a lease that ends unrenewed (a
-- crashed worker) frees it by ending (held_until past). The lock token says
-- which slot an item holds ('lock_<id>_flow<slot>_...'), so the calls of a
-- hub without limits never read this table.
CREATE TABLE __SCHEMA__.taskhub_flow_slots (
    kind       text    NOT NULL,
    name       text    NOT NULL,
    slot       integer NOT NULL,
    item_id    bigint,            -- worker_queue.id of the holder, NULL: never held
    held_until bigint  NOT NULL,  -- epoch ms: the holder's lease end; free once past
    -- The only index: a claim, a renewal or a release updates no indexed
    -- column, so each is a HOT update.
    PRIMARY KEY (kind, name, slot)
);
-- What the fetches read of the rules, one row per kind, kept by
-- taskhub_change_flow_rule with every change: the paused names, and the
-- limited ones with their limits. A fetch reads it by its key (no row: no
-- rules), instead of gathering the rules on every call.
CREATE TABLE __SCHEMA__.taskhub_flow_summary (
    kind    text      PRIMARY KEY,
    paused  text[]    NOT NULL,
    limited text[]    NOT NULL,
    limits  integer[] NOT NULL
);
