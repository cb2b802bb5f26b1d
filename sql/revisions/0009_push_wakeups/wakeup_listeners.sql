-- taskhub-pg 0009: who listens for wakeups, and what they may call.
-- The workers listening for wakeups, one row per listening connection, and
-- whether it waits for work right now. Procedures notify only a listener that
-- waits, once (taskhub_wake): a busy worker polls anyway, so a hub under load
-- sends few notifications, and one whose runtime never listens sends none.
-- Unlogged: after a crash the listeners register again.
CREATE UNLOGGED TABLE __SCHEMA__.taskhub_wakeup_listeners (
    pid           integer     PRIMARY KEY,
    queue         text        NOT NULL CHECK (queue IN ('orchestrator', 'worker')),
    waiting       boolean     NOT NULL DEFAULT false,
    registered_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX taskhub_wakeup_listeners_waiting_idx
    ON __SCHEMA__.taskhub_wakeup_listeners (queue) WHERE waiting;

-- Workers register and say when they wait: granted to every runtime role by
-- the migration run (taskhub_refresh_runtime_roles).
INSERT INTO __SCHEMA__.taskhub_runtime_privileges (object_kind, object_name, privilege, needed_by)
SELECT 'function', name, 'EXECUTE', 'taskhub workers: push wakeups (LISTEN instead of polling)'
  FROM unnest(ARRAY['taskhub_listen', 'taskhub_set_waiting']) AS name;
