"""One runtime process of the capacity bench: the released duroxide runtime,
4 orchestration and 4 activity slots (the first probe's), serving the
bench's orchestration on one schema, a hub or 0.2.2's own, until stopped.

    python -m bench.capacity.runtime_process URL SCHEMA LOG_FILE READY_FILE
"""

from __future__ import annotations

import sys

import duroxide

from bench.capacity import workload
from drills.soak.runtime_worker import serve


def main(url: str, schema: str, log_file: str, ready_file: str) -> None:
    options = duroxide.RuntimeOptions(
        dispatcher_poll_interval_ms=20, orchestration_concurrency=4, worker_concurrency=4
    )
    serve(url, schema, log_file, ready_file, options, workload.register)


if __name__ == "__main__":
    main(*sys.argv[1:5])
