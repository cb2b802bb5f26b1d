-- taskhub-pg 0029: priorities and labels (docs/flow-control.md). The queues
-- and the leases get the steering of their instance, and the queues a rank
-- and its index, which the fetches walk: columns without defaults (a change
-- of the catalog alone, no rewrite) and an index built under the lock the
-- revision declares (as in sql/head/tables/*.sql).
ALTER TABLE __SCHEMA__.orchestrator_queue
    ADD COLUMN taskhub_priority smallint,
    ADD COLUMN taskhub_labels   text[],
    ADD COLUMN taskhub_rank     timestamptz;
ALTER TABLE __SCHEMA__.worker_queue
    ADD COLUMN taskhub_priority smallint,
    ADD COLUMN taskhub_labels   text[],
    ADD COLUMN taskhub_rank     timestamptz;
ALTER TABLE __SCHEMA__.instance_locks
    ADD COLUMN taskhub_priority smallint,
    ADD COLUMN taskhub_labels   text[];
CREATE INDEX taskhub_orch_rank_idx
    ON __SCHEMA__.orchestrator_queue ((coalesce(taskhub_rank, visible_at)), id);
CREATE INDEX taskhub_worker_rank_idx
    ON __SCHEMA__.worker_queue ((coalesce(taskhub_rank, visible_at)), id);

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
