-- taskhub-pg 0019: where an instance's W3C trace context is kept, and who may
-- record and read it.
-- The W3C trace context (traceparent, tracestate) an instance was started or
-- first reached with, so that the workers running its activities continue
-- the caller's trace. A table of ours: the runtime rewrites its queue items
-- and history in its own format, and would drop anything added to them.
-- Written by taskhub_enqueue_traced_orchestrator_work, read by
-- taskhub_trace_context, deleted with the instance (delete_instances_atomic).
CREATE TABLE __SCHEMA__.taskhub_trace_contexts (
    instance_id text        NOT NULL PRIMARY KEY,
    traceparent text        NOT NULL
        CHECK (traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'),
    tracestate  text        CHECK (octet_length(tracestate) <= 512),
    recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The provider records a context on start_orchestration and raise_event, and
-- its workers read it: granted to every runtime role by the migration run
-- (taskhub_refresh_runtime_roles).
INSERT INTO __SCHEMA__.taskhub_runtime_privileges (object_kind, object_name, privilege, needed_by)
SELECT 'function', name, 'EXECUTE',
       'taskhub provider: W3C trace context of start_orchestration, raise_event and the workers'
  FROM unnest(ARRAY['taskhub_enqueue_traced_orchestrator_work', 'taskhub_trace_context']) AS name
ON CONFLICT (object_kind, object_name) DO NOTHING;

-- An operator reads an instance's trace (docs/ops.md), and raises events from
-- a traced process: granted to every operator role by the migration run.
INSERT INTO __SCHEMA__.taskhub_operator_privileges
       (object_kind, object_name, privilege, columns, needed_by)
VALUES
    ('function', 'taskhub_trace_context', 'EXECUTE', NULL, 'runbook: which trace an instance belongs to'),
    ('function', 'taskhub_enqueue_traced_orchestrator_work', 'EXECUTE', NULL, 'taskhub-pg cancel, raise-event from a traced process')
ON CONFLICT (object_kind, object_name, privilege) DO NOTHING;
