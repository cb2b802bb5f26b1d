-- Every change of a flow rule: who (the session's login), when, why, and the
-- rule before and after (NULL: no rule). Written by the taskhub_*_flow
-- functions in the transaction of the change; an operator reads it.
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
