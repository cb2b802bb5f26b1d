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
