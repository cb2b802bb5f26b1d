-- Announce work that is visible now, on taskhub_wakeup_channel(). The payload
-- names the queue ('orchestrator' or 'worker'), and for a tagged worker item
-- its tag ('worker:gpu'), so that a worker can skip tags it does not serve.
-- PostgreSQL delivers it at commit (nothing if the transaction rolls back),
-- once per distinct payload per transaction. Only while a listener of that
-- queue waits (taskhub_wakeup_listeners): otherwise it costs one look at a
-- table of a few rows. The duroxide runtime does not listen and is not affected.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_wake(p_queue text, p_tag text DEFAULT NULL)
RETURNS void
LANGUAGE sql
AS $$
    SELECT pg_catalog.pg_notify(__SCHEMA__.taskhub_wakeup_channel(),
                                p_queue || coalesce(':' || p_tag, ''))
     WHERE EXISTS (SELECT 1
                     FROM __SCHEMA__.taskhub_wakeup_listeners AS l
                    WHERE l.queue = p_queue AND l.waiting)
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_wake(text, text) FROM PUBLIC;
