"""One soak Python worker process: our ActivityWorker serving the activities
tagged for it, until it is stopped.

    python -m drills.soak.python_worker URL SCHEMA LOG_FILE READY_FILE

Every second it writes its WorkerStats as JSON next to READY_FILE
(READY_FILE.stats), which the soak reads each minute.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from drills.soak import workload
from provider import ActivityContext, ActivityWorker, TagFilter, TaskHub

APPLICATION_NAME = "soak-python-worker"
STATS_EVERY_S = 1.0


def build_worker(hub: TaskHub) -> ActivityWorker:
    worker = ActivityWorker(hub, tags=TagFilter.only(workload.PYTHON_TAG), concurrency=4)
    failed_once: set[int] = set()  # Flaky's first attempts (one process serves them all)
    lock = threading.Lock()

    @worker.activity("Label")
    def label(_ctx: ActivityContext, n: int) -> dict[str, Any]:
        return {"label": f"order-{n}", "carrier": ("post", "courier")[n % 2]}

    @worker.activity("Flaky")
    def flaky(_ctx: ActivityContext, n: int) -> int:
        with lock:
            first = n not in failed_once
            if first:
                failed_once.add(n)
            else:
                failed_once.discard(n)
        if first:
            raise ConnectionError(f"the carrier's service timed out for order {n}")
        return n * 3

    return worker


def write_stats(worker: ActivityWorker, path: Path) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(dataclasses.asdict(worker.stats)))
    os.replace(partial, path)


def serve_until_terminated(worker: ActivityWorker, ready_file: str) -> None:
    """Run `worker` until SIGTERM: READY_FILE once it serves, its WorkerStats
    in READY_FILE.stats every STATS_EVERY_S and at the end."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stats = Path(ready_file + ".stats")
    with worker:
        Path(ready_file).touch()
        while not stop.wait(STATS_EVERY_S):
            write_stats(worker, stats)
    write_stats(worker, stats)


def main(url: str, schema: str, log_file: str, ready_file: str) -> None:
    logging.basicConfig(filename=log_file, level=logging.WARNING)
    with TaskHub.connect(url, schema, application_name=APPLICATION_NAME) as hub:
        serve_until_terminated(build_worker(hub), ready_file)


if __name__ == "__main__":
    main(*sys.argv[1:5])
