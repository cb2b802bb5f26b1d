-- Whether a SQLSTATE names a passing condition of the server (a lost
-- connection, a timeout, a deadlock, a full disk, a failover), not of the
-- request: the ones the provider retries (provider/errors.py,
-- is_retryable_sqlstate; tests/sql/test_schedule_failures.py holds the two
-- lists equal). A schedule's fire lets such a failure through instead of
-- counting it against the schedule.
CREATE FUNCTION __SCHEMA__.taskhub_transient_sqlstate(p_sqlstate text)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT left(p_sqlstate, 2) IN ('08', '53', '57', '58')
        OR p_sqlstate IN ('40001', '40P01', '55P03', '0A000', '25006', '26000', '42P05')
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_transient_sqlstate(text) FROM PUBLIC;
