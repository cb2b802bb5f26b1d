-- taskhub-pg 0029: flow control (docs/flow-control.md). The worker queue
-- gets the activity's name as a column of its own (NULL on the rows queued
-- before: the fetch reads their name from work_item when a rule needs it),
-- a change of the catalog alone (no rewrite, no scan), under the brief lock
-- the revision declares. The rules, their slots and their changes are new
-- tables (as in sql/head/tables/taskhub_flow_*.sql).
ALTER TABLE __SCHEMA__.worker_queue ADD COLUMN taskhub_activity_name text;

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

CREATE TABLE __SCHEMA__.taskhub_flow_slots (
    kind       text    NOT NULL,
    name       text    NOT NULL,
    slot       integer NOT NULL,
    item_id    bigint,
    lock_token text,
    PRIMARY KEY (kind, name, slot)
);

CREATE TABLE __SCHEMA__.taskhub_flow_summary (
    kind    text      PRIMARY KEY,
    paused  text[]    NOT NULL,
    paused_labels text[] NOT NULL,
    paused_orchestrations text[] NOT NULL,
    limited text[]    NOT NULL,
    limits  integer[] NOT NULL,
    rated   text[]    NOT NULL
);

CREATE TABLE __SCHEMA__.taskhub_flow_buckets (
    kind           text             NOT NULL,
    name           text             NOT NULL,
    per_second     double precision NOT NULL,
    burst          integer          NOT NULL,
    tokens         double precision NOT NULL,
    refilled_at_ms bigint           NOT NULL,
    PRIMARY KEY (kind, name)
);

CREATE TABLE __SCHEMA__.taskhub_flow_changes (
    id                 bigserial   PRIMARY KEY,
    changed_at         timestamptz NOT NULL,
    changed_by         text        NOT NULL,
    kind               text        NOT NULL,
    name               text        NOT NULL,
    action             text        NOT NULL
                       CHECK (action IN ('pause', 'resume', 'set limit', 'remove limit',
                                         'set rate', 'remove rate')),
    paused_before      boolean,
    paused_after       boolean,
    max_running_before integer,
    max_running_after  integer,
    per_second_before  double precision,
    per_second_after   double precision,
    burst_before       integer,
    burst_after        integer,
    reason             text
);
CREATE INDEX taskhub_flow_changes_key_idx
    ON __SCHEMA__.taskhub_flow_changes (kind, name, changed_at);
