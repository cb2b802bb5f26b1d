"""One runtime process of the capacity bench: the released duroxide runtime,
4 orchestration and 4 activity slots (the first probe's), serving the
bench's orchestration on one schema, a hub or 0.2.2's own, until stopped.

    python -m bench.capacity.runtime_process URL SCHEMA LOG_FILE READY_FILE
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import duroxide

from bench.capacity import workload


def main(url: str, schema: str, log_file: str, ready_file: str) -> None:
    duroxide.init_tracing(log_file, log_level="warn")
    provider = duroxide.PostgresProvider.connect_with_schema(url, schema)
    options = duroxide.RuntimeOptions(
        dispatcher_poll_interval_ms=20, orchestration_concurrency=4, worker_concurrency=4
    )
    runtime = duroxide.Runtime(provider, options)
    workload.register(runtime)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runtime.start()
    Path(ready_file).touch()
    stop.wait()
    runtime.shutdown(timeout_ms=5_000)


if __name__ == "__main__":
    main(*sys.argv[1:5])
