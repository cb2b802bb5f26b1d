-- The slots of each concurrency limit (taskhub_flow_rules.max_running): a
-- limit of N is N rows, made and removed by taskhub_change_flow_rule. A fetch
-- leases an item of a limited activity only with a free slot, which it
-- claims, under the key's advisory lock (taken without waiting), by writing
-- the item's id and lock token in it, while fewer than max_running slots
-- are held. A slot is held while that item holds that lease (by the server's
-- clock), read from the item's own row: an ack (the row goes), an abandon
-- (its token goes) or a lease that ends unrenewed (a crashed worker) frees
-- it, and a renewal keeps it, with no write here; the calls after a fetch
-- never touch this table. A held slot is never deleted: after a limit is
-- lowered or removed, it counts until its lease ends.
-- A label's limit holds the orchestration turns of its instances too, in
-- slots of their own (kind 'turn:label' or 'turn:label_each', made one at a
-- time by fetch_orchestration_item: taskhub_claim_turn_slot): such a slot
-- is held while its instance's lease (instance_locks) has that token.
CREATE TABLE __SCHEMA__.taskhub_flow_slots (
    kind       text    NOT NULL,
    name       text    NOT NULL,
    slot       integer NOT NULL,
    item_id    bigint,  -- worker_queue.id of the latest holder (NULL: never held, or a turn)
    lock_token text,    -- and the lease it was claimed for
    PRIMARY KEY (kind, name, slot)
);
-- What the fetches read of the rules, one row ('rules'), kept
-- by taskhub_change_flow_rule with every change: the paused activities and
-- labels, and the limited and rated keys, as kind:name ('activity:Charge',
-- 'label:tenant=acme', 'label_each:tenant'). A fetch reads it by its key
-- (no row: no rules), instead of gathering the rules on every call.
CREATE TABLE __SCHEMA__.taskhub_flow_summary (
    kind    text      PRIMARY KEY,
    paused  text[]    NOT NULL,  -- paused activities
    paused_labels text[] NOT NULL,  -- paused labels, 'key=value'
    paused_orchestrations text[] NOT NULL,  -- paused orchestrations' names
    limited text[]    NOT NULL,  -- keys with a concurrency limit, not paused
    limits  integer[] NOT NULL,  -- their max_running, in the same order
    rated   text[]    NOT NULL   -- keys with a rate limit, not paused
);

-- The token bucket of each rate limit (taskhub_flow_rules.per_second), made
-- full and removed by taskhub_change_flow_rule. A fetch of a rated activity
-- takes a token under the key's advisory lock, in the statement that refills
-- the bucket for the time since its last take (at most burst tokens), or
-- skips the activity when there is none: it never waits.
CREATE TABLE __SCHEMA__.taskhub_flow_buckets (
    kind           text             NOT NULL,
    name           text             NOT NULL,
    per_second     double precision NOT NULL,
    burst          integer          NOT NULL,
    tokens         double precision NOT NULL,
    refilled_at_ms bigint           NOT NULL,
    PRIMARY KEY (kind, name)
);
