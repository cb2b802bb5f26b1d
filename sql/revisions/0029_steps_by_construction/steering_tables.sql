-- taskhub-pg 0029: priorities and labels (docs/flow-control.md). The queues
-- and the leases get the steering of their instance, and the queues a rank
-- and its index, which the fetches walk: columns without defaults (a change
-- of the catalog alone, no rewrite) and an index built under the lock the
-- revision declares (as in sql/head/tables/*.sql).
ALTER TABLE __SCHEMA__.orchestrator_queue
    ADD COLUMN taskhub_priority smallint,
    ADD COLUMN taskhub_labels   text[],
    ADD COLUMN taskhub_orchestration text,
    ADD COLUMN taskhub_rank     timestamptz;
ALTER TABLE __SCHEMA__.worker_queue
    ADD COLUMN taskhub_priority smallint,
    ADD COLUMN taskhub_labels   text[],
    ADD COLUMN taskhub_orchestration text,
    ADD COLUMN taskhub_rank     timestamptz;
ALTER TABLE __SCHEMA__.instance_locks
    ADD COLUMN taskhub_priority smallint,
    ADD COLUMN taskhub_labels   text[],
    ADD COLUMN taskhub_orchestration text;
-- The rank's indexes take the place of visible_at's, which nothing reads
-- any more; and none but the primary key holds the id as a column (the
-- rank's hold id + 0, an expression no lookup by id can use): with
-- statistics that say "empty", a lookup by id could be planned as a walk of
-- another index that ends in the id (2.6 ms and 770 buffers an ack behind
-- 100,000 rows, tests/sql/test_plans_under_statistics.py).
DROP INDEX __SCHEMA__.taskhub_orch_visible_idx;
DROP INDEX __SCHEMA__.taskhub_worker_visible_idx;
DROP INDEX __SCHEMA__.taskhub_orch_instance_idx;
CREATE INDEX taskhub_orch_instance_idx
    ON __SCHEMA__.orchestrator_queue (instance_id, (id + 0));
CREATE INDEX taskhub_orch_rank_idx
    ON __SCHEMA__.orchestrator_queue ((coalesce(taskhub_rank, visible_at)), (id + 0));
CREATE INDEX taskhub_orch_lane_idx
    ON __SCHEMA__.orchestrator_queue (taskhub_labels, (coalesce(taskhub_rank, visible_at)), (id + 0))
    WHERE taskhub_labels IS NOT NULL;
CREATE INDEX taskhub_worker_rank_idx
    ON __SCHEMA__.worker_queue ((coalesce(taskhub_rank, visible_at)), (id + 0));

CREATE TABLE __SCHEMA__.taskhub_instance_labels (
    instance_id text        PRIMARY KEY,
    priority    smallint    NOT NULL CHECK (priority BETWEEN 0 AND 9),
    labels      text[]      NOT NULL,
    started_at  timestamptz NOT NULL
);

INSERT INTO __SCHEMA__.taskhub_settings (name, value, description)
VALUES ('priority_aging_ms', '300000',
        'The head start of the highest priority (9), in milliseconds: work of priority p is '
        'ranked as if it had become due p/9 of this earlier, so work that has waited longer than '
        'this is taken ahead of any that arrives after it, whatever their priorities. Read when '
        'work is queued. A whole number from 0 to 86400000; any other value is read as 300000, '
        'and taskhub-pg check names it.')
ON CONFLICT (name) DO NOTHING;
