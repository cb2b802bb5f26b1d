-- The transient conditions, one place: what a PostgreSQL server (or the
-- runtime's connection pool) says when a call failed for a passing reason.
-- `pattern` is a case-insensitive regular expression over the failure
-- message the runtime recorded; the first match names the condition, so the
-- generic connection failure comes last. Tested against real servers' messages in
-- tests/test_transient_failures.py.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_transient_conditions()
RETURNS TABLE (condition text, sqlstates text, pattern text)
LANGUAGE sql IMMUTABLE
AS $$
    VALUES
        ('admin_shutdown', '57P01',
         'terminating connection due to administrator command'),
        ('crash_shutdown', '57P02',
         'terminating connection because of crash of another server process'
         '|terminating connection due to unexpected postmaster exit'),
        ('cannot_connect_now', '57P03',
         'the database system is (starting up|shutting down|in recovery mode'
         '|not yet accepting connections|not accepting connections)'),
        ('idle_timeout', '25P03 57P05',
         'terminating connection due to idle(-in-transaction|-session) timeout'),
        ('serialization_failure', '40001',
         'could not serialize access|canceling statement due to conflict with recovery'),
        ('deadlock', '40P01',
         'deadlock detected'),
        ('lock_timeout', '55P03',
         'canceling statement due to lock timeout|could not obtain lock on'),
        ('statement_timeout', '57014',
         'canceling statement due to (statement timeout|user request)'),
        ('disk_full', '53100',
         'no space left on device|disk quota exceeded'),
        ('out_of_memory', '53200',
         'out of memory'),
        ('too_many_connections', '53300',
         'sorry, too many clients already|remaining connection slots are reserved'
         '|too many connections for'),
        ('read_only_transaction', '25006',
         'cannot execute [a-z ]+ in a read-only transaction'),
        ('connection_failure', '08000 08001 08003 08006',
         'server closed the connection unexpectedly|connection refused|connection reset'
         '|broken pipe|could not connect to server|connection to server .* failed'
         '|no connection to the server|error communicating with database'
         '|unexpected (eof|end of file)|pool timed out|attempted to acquire a connection on a closed pool')
$$;

