-- The downgrade's index, as 0001 made it: 0017's functions find messages by token.
CREATE INDEX IF NOT EXISTS taskhub_orch_lock_idx
    ON __SCHEMA__.orchestrator_queue (lock_token) WHERE lock_token IS NOT NULL;
