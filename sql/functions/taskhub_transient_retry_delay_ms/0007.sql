-- How long a given-back turn's messages wait before the next delivery:
-- 100 ms, doubling with each delivery, at most 5 s. A fault that lasts is
-- then not retried in a tight loop, and the runtime's poison check (after
-- max_attempts deliveries, about 20 s of such failures) and dead_letters
-- still end a turn that keeps failing.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_transient_retry_delay_ms(p_attempt integer)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$
    SELECT least(5000, 100 * power(2, least(greatest(coalesce(p_attempt, 1), 1) - 1, 16)))::bigint
$$;
