"""The failover drill: a primary and a streaming standby of its own, under
the released duroxide 0.2.2 runtime's load and our ActivityWorker's, through
a switchover, a crash with the standby caught up and a crash with it behind.

    python -m drills.failover        (make failover-drill)

    servers.py         the two servers: initdb, pg_basebackup, promotion, WAL positions
    wal.py             LSNs, a stopped server's last checkpoint, what a standby never got
    proxy.py           the TCP proxy repointed at promotion (the runtime's, the standby's)
    crash.py           a crash at the instant the standby has caught up
    events.py          switchover, crash, lagging: each ends with the standby promoted
    workload.py        the order, its activities, and the count of their executions
    runtime_worker.py  one process of the released runtime, through the proxy
    python_worker.py   one process of our ActivityWorker, on the multi-host URL
    application.py     starts at a steady rate, repeated after a RetryableError
    outcome.py         what an event left: completed, failed, stuck, lost and why
    report.py          the per-event lines and the verdicts
    defects.py         the flavours the drill must fail on
    runner.py          one drill from start to outcomes

tests/faults/test_failover_drill.py runs a bounded switchover and crash in make test.
"""
