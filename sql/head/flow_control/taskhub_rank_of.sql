-- The rank of work due at p_visible_at with priority p_priority: p/9 of
-- p_aging_ms earlier (priority_aging_ms, taskhub_priority_aging_ms), so that
-- among due work the fetches take higher priority first, and nothing that
-- became due more than p_aging_ms after an item goes ahead of it. NULL for
-- priority 0 (or none): the queues' index reads NULL as visible_at, and
-- such work is queued with no extra write. Reads no table: a statement
-- that calls it stays one table on Citus. STABLE, as timestamptz - interval
-- is: a function not inlined (marked more than its body is, or with an
-- argument used twice that holds a subquery) has its body planned again by
-- each statement that calls it, 0.1 ms a turn.
CREATE FUNCTION __SCHEMA__.taskhub_rank_of(
    p_visible_at timestamptz,
    p_priority   smallint,
    p_aging_ms   integer
)
RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    -- Each argument once: a call whose argument holds a subquery is inlined
    -- only so (ack_orchestration_item's message to another instance).
    SELECT p_visible_at - make_interval(secs => nullif(p_priority, 0) / 9.0 * p_aging_ms / 1000.0)
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_rank_of(timestamp with time zone, smallint, integer) FROM PUBLIC;
