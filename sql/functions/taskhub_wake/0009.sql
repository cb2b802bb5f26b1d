-- Announce work that is visible now, on taskhub_wakeup_channel(), to the
-- listeners of p_queue that wait (taskhub_wakeup_listeners). Each waiting
-- listener is woken once: its flag is cleared here, and it sets it again
-- when it waits again (taskhub_set_waiting). So a hub under load sends about
-- one notification per worker that ran out of work, not one per message.
-- The payload names the queue ('orchestrator' or 'worker') and the tag of a
-- tagged worker item ('worker:gpu'). PostgreSQL delivers it at commit, and
-- nothing if the transaction rolls back. The duroxide runtime never listens.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_wake(p_queue text, p_tag text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    -- Index scans of a few rows: the callers plan with enable_seqscan off,
    -- and a seq scan costed that high would be JIT-compiled on every call.
    IF EXISTS (SELECT 1
                 FROM __SCHEMA__.taskhub_wakeup_listeners AS l
                WHERE l.queue = p_queue AND l.waiting) THEN
        -- A listener that another transaction is waking right now is skipped,
        -- never waited for.
        UPDATE __SCHEMA__.taskhub_wakeup_listeners AS l
           SET waiting = false
         WHERE l.pid IN (SELECT w.pid
                           FROM __SCHEMA__.taskhub_wakeup_listeners AS w
                          WHERE w.queue = p_queue AND w.waiting
                            FOR UPDATE SKIP LOCKED);
        IF FOUND THEN
            PERFORM pg_catalog.pg_notify(__SCHEMA__.taskhub_wakeup_channel(),
                                         p_queue || coalesce(':' || p_tag, ''));
        END IF;
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_wake(text, text) FROM PUBLIC;
