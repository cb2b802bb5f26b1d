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
