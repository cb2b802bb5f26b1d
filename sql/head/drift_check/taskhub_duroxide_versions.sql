-- The versions of duroxide 0.2.2's own migrations. _duroxide_migrations must
-- hold each of them: the runtime applies, on connect, every version it knows
-- that the ledger lacks, and its migrations would replace our procedures
-- with its own (the lease defects back).
CREATE FUNCTION __SCHEMA__.taskhub_duroxide_versions()
RETURNS bigint[]
LANGUAGE sql IMMUTABLE
AS $$
    SELECT ARRAY[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                 18, 19, 20, 21, 23, 25]::bigint[]
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_duroxide_versions() FROM PUBLIC;
