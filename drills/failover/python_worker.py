"""One drill Python worker process: our ActivityWorker on the libpq
multi-host URL, serving the activity tagged `python` until it is stopped.

    python -m drills.failover.python_worker URL SCHEMA LOG_FILE READY_FILE

Every second it writes its WorkerStats next to READY_FILE (READY_FILE.stats):
the drill reads the leases lost and the renewals per event from them. With
FAILOVER_DEFECT in its environment it runs a defect flavour (defects.py).
"""

from __future__ import annotations

import logging
import sys

from drills.failover import defects, workload
from drills.soak.python_worker import serve_until_terminated
from provider import ActivityWorker, TagFilter, TaskHub

APPLICATION_NAME = "failover-python-worker"
CONCURRENCY = 16
# A short lease, renewed every third of it: a failover that kept renewals
# away for more than about 4 s would cost a lease.
LOCK_TIMEOUT_MS = 6_000


def main(url: str, schema: str, log_file: str, ready_file: str) -> None:
    logging.basicConfig(
        filename=log_file, level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s"
    )
    defects.apply_from_environment()
    workload.RunLog.path = workload.runs_file(log_file)
    with TaskHub.connect(
        url, schema, application_name=APPLICATION_NAME, pool_max_size=CONCURRENCY + 4
    ) as hub:
        worker = ActivityWorker(
            hub,
            tags=TagFilter.only(workload.PYTHON_TAG),
            concurrency=CONCURRENCY,
            lock_timeout_ms=LOCK_TIMEOUT_MS,
        )
        worker.register(workload.SHIP, workload.ship)
        serve_until_terminated(worker, ready_file)


if __name__ == "__main__":
    main(*sys.argv[1:5])
