-- taskhub-pg 0007: the caller's clock can move a lease by at most one second.
--
-- The one clock of every lease decision is the database server's clock, with
-- the caller's clock as a floor (so a lease written here agrees with a caller
-- whose clock runs slightly ahead). Until 0007 the floor was unbounded up to
-- the 300 s refusal: a caller 290 s ahead got leases that outlived their
-- timeout by 290 s, and a later renewal with a correct clock could leave
-- locked_until before locked_at. Now no lease ends later than the server's
-- now, plus the timeout, plus taskhub_max_clock_skew_ms.

-- How far ahead of the server a caller's clock is believed (milliseconds).
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_max_clock_skew_ms()
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$ SELECT 1000::bigint $$;

