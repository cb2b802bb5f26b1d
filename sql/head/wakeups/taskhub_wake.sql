-- Announce work that is visible now, on taskhub_wakeup_channel(). The payload
-- names the queue ('orchestrator' or 'worker'), and for a tagged worker item
-- its tag ('worker:gpu'), so that a worker can skip tags it does not serve.
-- PostgreSQL delivers it at commit (nothing if the transaction rolls back),
-- once per distinct payload per transaction. Only while a listener of that
-- queue waits (taskhub_wakeup_listeners): otherwise it costs one look at a
-- table of a few rows. The duroxide runtime does not listen and is not affected.
CREATE FUNCTION __SCHEMA__.taskhub_wake(p_queue text, p_tag text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    -- An index scan of a few rows: the callers plan with enable_seqscan off,
    -- and a seq scan costed that high would be JIT-compiled on every call.
    IF EXISTS (SELECT 1
                 FROM __SCHEMA__.taskhub_wakeup_listeners AS l
                WHERE l.queue = p_queue AND l.waiting) THEN
        PERFORM pg_catalog.pg_notify(__SCHEMA__.taskhub_wakeup_channel(),
                                     p_queue || coalesce(':' || p_tag, ''));
    END IF;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_wake(text, text) FROM PUBLIC;
