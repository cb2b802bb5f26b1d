-- Flow control (docs/flow-control.md): what the fetches may hand out, per
-- key. A key is a kind and a name: 'activity' and an activity's name;
-- 'label' and a label, 'key=value', which the items of the instances
-- started with it carry (taskhub_instance_labels); 'label_each' and a
-- label's key, a limit for each of its values (per tenant); 'orchestration'
-- and an orchestration's name (its turns only: paused or limited). A
-- paused key is handed out never; a key with max_running is handed out while
-- fewer than that many of its items hold a lease (taskhub_flow_slots); a key
-- with per_second is handed out while its bucket has a token
-- (taskhub_flow_buckets).
-- fetch_work_item reads this table once per call and enforces it, so every
-- runtime obeys it, the released one included. Only the hub's owner and its
-- operator roles change it, through the taskhub_*_flow functions, which keep
-- every change in taskhub_flow_changes.
CREATE TABLE __SCHEMA__.taskhub_flow_rules (
    kind        text        NOT NULL CHECK (kind IN ('activity', 'label', 'label_each',
                                                       'orchestration')),
    name        text        NOT NULL CHECK (name <> '' AND octet_length(name) <= 1000),
    paused      boolean     NOT NULL DEFAULT false,
    max_running integer     CHECK (max_running BETWEEN 1 AND 10000),
    -- A rate limit: per_second on average, up to burst at once.
    per_second  double precision CHECK (per_second > 0 AND per_second <= 100000),
    burst       integer     CHECK (burst BETWEEN 1 AND 100000),
    changed_at  timestamptz NOT NULL,
    changed_by  text        NOT NULL,
    reason      text,
    PRIMARY KEY (kind, name),
    -- A key with none of them is no rule: its row is deleted instead.
    CONSTRAINT a_rate_has_a_burst CHECK ((per_second IS NULL) = (burst IS NULL)),
    CONSTRAINT a_flow_rule_pauses_or_limits
        CHECK (paused OR max_running IS NOT NULL OR per_second IS NOT NULL),
    -- A limit for each value of a label: neither a pause nor a rate.
    CONSTRAINT a_label_each_rule_only_limits
        CHECK (kind <> 'label_each' OR (NOT paused AND per_second IS NULL)),
    -- An orchestration's turns: paused or limited, not rated.
    CONSTRAINT an_orchestration_rule_has_no_rate
        CHECK (kind <> 'orchestration' OR per_second IS NULL)
);
