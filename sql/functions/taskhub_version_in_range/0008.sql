-- Whether an execution's pinned duroxide version lies in a packed range
-- (major * 1,000,000 + minor * 1,000 + patch, as the runtime packs it). An
-- execution with no pinned version is in every range. A plain SQL
-- expression, so the planner inlines it where fetch_orchestration_item uses it.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_version_in_range(
    p_major integer,
    p_minor integer,
    p_patch integer,
    p_min   bigint,
    p_max   bigint
)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT p_major IS NULL
        OR p_major::bigint * 1000000 + coalesce(p_minor, 0) * 1000 + coalesce(p_patch, 0)
           BETWEEN p_min AND p_max
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_version_in_range(integer, integer, integer, bigint, bigint) FROM PUBLIC;
