-- Retention, one bounded batch per call (taskhub-pg prune calls it until a
-- batch deletes nothing): up to p_batch_size ended root instances (current
-- execution Completed, Failed or ContinuedAsNew, completed before
-- p_completed_before_ms), oldest first, each deleted with its whole tree of
-- sub-orchestrations and everything they own, as delete_instances_atomic
-- deletes them with p_force (a sub-orchestration still running goes with its
-- ended root). One transaction; set-based statements over the batch's ids.
--
-- It waits for nobody, so that it can run while the hub serves and beside
-- another pruner or a delete: a root whose row another session holds is
-- skipped (SKIP LOCKED), and so is a tree with a member or a lease row held
-- by another session (a turn being acked, renewed or abandoned), a member a
-- fetch is leasing, or a child it did not see in time. A skipped tree is left
-- whole for a later batch. (Waiting for an ack's lease while holding its
-- instance row would deadlock with that ack, which locks its lease first.)
-- Only a worker item being leased or acked right now is waited for.
--
-- Candidates walk taskhub_instances_created_idx from the oldest instance,
-- bounded by the cutoff: an execution completes after its instance was
-- created, give or take the clock skew a caller may add (taskhub_clock_ms).
-- A root still running stays in that walk until it ends.
CREATE FUNCTION __SCHEMA__.taskhub_prune_ended(p_completed_before_ms bigint, p_batch_size integer)
RETURNS TABLE (
    roots_deleted          bigint,
    instances_deleted      bigint,
    executions_deleted     bigint,
    events_deleted         bigint,
    queue_messages_deleted bigint
)
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_cutoff     timestamptz;
    v_created    timestamptz;
    v_roots      text[];
    v_children   text[];
    v_child_root text[];
    v_members    text[];
    v_of_root    text[];
    v_held       text[];
    v_busy       text[];
    v_ids        text[];
    v_instances  bigint;
    v_executions bigint;
    v_events     bigint;
    v_orch       bigint;
    v_worker     bigint;
BEGIN
    -- The call gate (docs/architecture.md): held by a migration, wait until
    -- it commits, take in its catalog, run the definition it left.
    IF NOT pg_try_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0)) THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('taskhub:__SCHEMA__:calls', 0));
        PERFORM 1 FROM __SCHEMA__.instances WHERE false;
        RETURN QUERY EXECUTE 'SELECT * FROM __SCHEMA__.taskhub_prune_ended($1, $2)'
            USING p_completed_before_ms, p_batch_size;
        RETURN;
    END IF;
    IF p_completed_before_ms IS NULL THEN
        RAISE EXCEPTION 'p_completed_before_ms must not be NULL: prune needs a cutoff'
            USING ERRCODE = '22023';
    END IF;
    IF p_batch_size IS NULL OR p_batch_size < 1 OR p_batch_size > 10000 THEN
        RAISE EXCEPTION 'p_batch_size must be between 1 and 10000, not %', p_batch_size
            USING ERRCODE = '22023';
    END IF;
    v_cutoff  := to_timestamp(p_completed_before_ms / 1000.0);
    v_created := to_timestamp((p_completed_before_ms + __SCHEMA__.taskhub_max_clock_skew_ms())
                              / 1000.0);

    -- 1. The roots, oldest first, each row locked or skipped.
    v_roots := ARRAY(
        SELECT i.instance_id
          FROM __SCHEMA__.instances AS i
          JOIN __SCHEMA__.executions AS e
            ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
         -- not by instance: retention walks the oldest instances of the hub.
         WHERE i.created_at < v_created
           AND i.parent_instance_id IS NULL
           AND e.status IN ('Completed', 'Failed', 'ContinuedAsNew')
           AND e.completed_at < v_cutoff
         ORDER BY i.created_at, i.instance_id
         LIMIT p_batch_size
           FOR UPDATE OF i SKIP LOCKED);
    IF cardinality(v_roots) = 0 THEN
        RETURN QUERY SELECT 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint;
        RETURN;
    END IF;

    -- 2. Their descendants, each with the root it belongs to.
    WITH RECURSIVE tree (instance_id, root_id) AS (
        SELECT c.instance_id, c.parent_instance_id
          FROM __SCHEMA__.instances AS c
         WHERE c.parent_instance_id = ANY (v_roots)
        UNION
        SELECT c.instance_id, t.root_id
          FROM tree AS t
          JOIN __SCHEMA__.instances AS c ON c.parent_instance_id = t.instance_id
    )
    SELECT coalesce(array_agg(t.instance_id), '{}'), coalesce(array_agg(t.root_id), '{}')
      INTO v_children, v_child_root
      FROM tree AS t;
    v_members := v_roots || v_children;
    v_of_root := v_roots || v_child_root;

    -- 3. Which trees are busy. A descendant whose row could not be locked
    -- (or is gone) ...
    v_held := ARRAY(
        SELECT i.instance_id
          FROM __SCHEMA__.instances AS i
         WHERE i.instance_id = ANY (v_children)
         ORDER BY i.instance_id
           FOR UPDATE SKIP LOCKED);
    v_busy := ARRAY(
        SELECT DISTINCT m.root_id
          FROM unnest(v_children, v_child_root) AS m (instance_id, root_id)
          LEFT JOIN unnest(v_held) AS h (instance_id) ON h.instance_id = m.instance_id
         WHERE h.instance_id IS NULL);
    -- ... a child the walk did not see (created meanwhile) ...
    v_busy := v_busy || ARRAY(
        SELECT DISTINCT m.root_id
          FROM __SCHEMA__.instances AS c
          JOIN unnest(v_members, v_of_root) AS m (instance_id, root_id)
            ON m.instance_id = c.parent_instance_id
          LEFT JOIN unnest(v_members) AS k (instance_id) ON k.instance_id = c.instance_id
         WHERE c.parent_instance_id = ANY (v_members)
           AND k.instance_id IS NULL);
    -- ... a fetch on a member right now (a late message to an ended
    -- instance): the fetch's own try-lock, taken here for the members with
    -- messages (a fetch needs one), so that no fetch leases them until this
    -- batch commits; CASE: only those, whatever order the planner tests in ...
    v_busy := v_busy || ARRAY(
        SELECT m.root_id
          FROM unnest(v_members, v_of_root) AS m (instance_id, root_id)
         WHERE CASE WHEN EXISTS (SELECT 1 FROM __SCHEMA__.orchestrator_queue AS q
                                  WHERE q.instance_id = m.instance_id)
                    THEN NOT pg_try_advisory_xact_lock(
                             __SCHEMA__.taskhub_instance_lock_key(m.instance_id))
                    ELSE false END);
    -- ... or a lease row another session holds; locked here otherwise, so
    -- that from now on an ack of a turn of these instances finds it gone.
    v_held := ARRAY(
        SELECT il.instance_id
          FROM __SCHEMA__.instance_locks AS il
         WHERE il.instance_id = ANY (v_members)
         ORDER BY il.instance_id
           FOR UPDATE SKIP LOCKED);
    v_busy := v_busy || ARRAY(
        SELECT m.root_id
          FROM __SCHEMA__.instance_locks AS il
          JOIN unnest(v_members, v_of_root) AS m (instance_id, root_id)
            ON m.instance_id = il.instance_id
          LEFT JOIN unnest(v_held) AS h (instance_id) ON h.instance_id = il.instance_id
         WHERE il.instance_id = ANY (v_members)
           AND h.instance_id IS NULL);
    IF cardinality(v_busy) > 0 THEN
        v_roots := ARRAY(SELECT r.id FROM unnest(v_roots) AS r (id) WHERE NOT r.id = ANY (v_busy));
        v_ids := ARRAY(
            SELECT m.instance_id
              FROM unnest(v_members, v_of_root) AS m (instance_id, root_id)
             WHERE NOT m.root_id = ANY (v_busy));
        IF cardinality(v_ids) = 0 THEN
            RETURN QUERY SELECT 0::bigint, 0::bigint, 0::bigint, 0::bigint, 0::bigint;
            RETURN;
        END IF;
    ELSE
        v_ids := v_members;
    END IF;

    -- 4. Everything the other trees own, as delete_instances_atomic deletes
    -- it, the lease rows first.
    DELETE FROM __SCHEMA__.instance_locks AS il WHERE il.instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.history AS h WHERE h.instance_id = ANY (v_ids);
    GET DIAGNOSTICS v_events = ROW_COUNT;
    DELETE FROM __SCHEMA__.executions AS e WHERE e.instance_id = ANY (v_ids);
    GET DIAGNOSTICS v_executions = ROW_COUNT;
    DELETE FROM __SCHEMA__.orchestrator_queue AS q WHERE q.instance_id = ANY (v_ids);
    GET DIAGNOSTICS v_orch = ROW_COUNT;
    DELETE FROM __SCHEMA__.worker_queue AS q WHERE q.instance_id = ANY (v_ids);
    GET DIAGNOSTICS v_worker = ROW_COUNT;
    DELETE FROM __SCHEMA__.kv_delta AS d WHERE d.instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.kv_store AS s WHERE s.instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.taskhub_trace_contexts AS t WHERE t.instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.taskhub_instance_labels AS l WHERE l.instance_id = ANY (v_ids);
    -- Their restarts, by either id: the ended run's output and input go too.
    DELETE FROM __SCHEMA__.taskhub_restarts AS r WHERE r.instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.taskhub_restarts AS r WHERE r.new_instance_id = ANY (v_ids);
    DELETE FROM __SCHEMA__.instances AS i WHERE i.instance_id = ANY (v_ids);
    GET DIAGNOSTICS v_instances = ROW_COUNT;

    RETURN QUERY SELECT cardinality(v_roots)::bigint, v_instances, v_executions, v_events,
                        v_orch + v_worker;
END;
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_prune_ended(bigint, integer) FROM PUBLIC;
