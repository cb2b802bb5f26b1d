-- The downgrade's index, as 0001 made it: 0020's functions find items by token.
CREATE INDEX IF NOT EXISTS taskhub_worker_lock_idx
    ON __SCHEMA__.worker_queue (lock_token) WHERE lock_token IS NOT NULL;
