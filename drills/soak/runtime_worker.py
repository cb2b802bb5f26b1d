"""One soak runtime process: the released duroxide 0.2.2 runtime serving the
soak's workload until it is stopped.

    python -m drills.soak.runtime_worker URL SCHEMA LOG_FILE READY_FILE

It logs the runtime's warnings and errors to LOG_FILE (the soak counts them)
and creates READY_FILE once the runtime runs.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duroxide

from drills.soak import workload


def runtime_options() -> Any:
    # The runtime's defaults for leases and retries; a short poll, as a
    # latency-minded deployment would set it.
    return duroxide.RuntimeOptions(
        dispatcher_poll_interval_ms=20,
        orchestration_concurrency=2,
        worker_concurrency=4,
    )


def serve(
    url: str,
    schema: str,
    log_file: str,
    ready_file: str,
    options: Any,
    register: Callable[[Any], None],
) -> None:
    """The released runtime with these options and this work, until SIGTERM
    (the capacity bench's processes too)."""
    duroxide.init_tracing(log_file, log_level="warn")
    provider = duroxide.PostgresProvider.connect_with_schema(url, schema)
    runtime = duroxide.Runtime(provider, options)
    register(runtime)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    runtime.start()
    Path(ready_file).touch()
    stop.wait()
    runtime.shutdown(timeout_ms=5_000)


def main(url: str, schema: str, log_file: str, ready_file: str) -> None:
    serve(url, schema, log_file, ready_file, runtime_options(), workload.register_with_runtime)


if __name__ == "__main__":
    main(*sys.argv[1:5])
