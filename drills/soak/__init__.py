"""The soak: the hub under a steady mix of work for tens of minutes, with an
operator's retention job, measured minute by minute (`make soak`).

    workload.py        the orchestrations and activities, and the mix
    runtime_worker.py  one process of the released duroxide 0.2.2 runtime
    python_worker.py   one process of our ActivityWorker (the tagged activities)
    application.py     starts orchestrations at a steady rate, raises events
    retention.py       `taskhub-pg prune` each minute, as an operator's cron
    sampler.py         what a minute did to the hub, the server and the workers
    verdicts.py        the targets, each a line that passes or fails
    report.py          the per-minute table and the plot
    runner.py          one soak from start to verdicts
"""
