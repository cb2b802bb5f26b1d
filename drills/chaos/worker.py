"""One chaos worker process: a duroxide 0.2.2 runtime on a schema, serving the
chaos workload until it is killed.

    python -m drills.chaos.worker URL SCHEMA LOG_FILE READY_FILE

It creates READY_FILE once the runtime runs. The runtime logs its warnings
(failed statements, lost connections) to LOG_FILE: by default it would write
them to stdout, where nobody reads them and a full pipe would stall it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import duroxide

from drills.chaos import workload

# Short leases: a SIGKILLed worker's turns and activities come back within
# seconds, not the default 30 s of an activity.
LOCK_TIMEOUT_MS = 3_000
CONNECT_RETRY_S = 0.5


def runtime_options() -> Any:
    return duroxide.RuntimeOptions(
        dispatcher_poll_interval_ms=20,
        orchestration_concurrency=2,
        worker_concurrency=4,
        orchestrator_lock_timeout_ms=LOCK_TIMEOUT_MS,
        worker_lock_timeout_ms=LOCK_TIMEOUT_MS,
        # max_attempts stays the runtime's default (10): every delivery a
        # fault costs counts, as it would in production.
    )


def connect(url: str, schema: str) -> Any:
    """The provider, once the server answers: a replacement worker may be
    started while the server restarts. Retries until the harness kills us."""
    while True:
        try:
            return duroxide.PostgresProvider.connect_with_schema(url, schema)
        except RuntimeError as error:
            print(f"connect failed, retrying: {error}", file=sys.stderr, flush=True)
            time.sleep(CONNECT_RETRY_S)


def main(url: str, schema: str, log_file: str, ready_file: str) -> None:
    duroxide.init_tracing(log_file, log_level="warn")
    runtime = duroxide.Runtime(connect(url, schema), runtime_options())
    workload.register(runtime)
    runtime.start()
    Path(ready_file).touch()
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main(*sys.argv[1:5])
