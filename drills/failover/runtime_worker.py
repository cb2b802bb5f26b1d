"""One drill runtime process: the released duroxide 0.2.2 runtime, through
the proxy that follows the primary, serving the drill's orchestration and
the runtime's activity until it is stopped.

    python -m drills.failover.runtime_worker URL SCHEMA LOG_FILE READY_FILE

Its WARN and ERROR lines go to LOG_FILE (the drill prints them per event),
its activity executions to LOG_FILE with the suffix .runs.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import duroxide

# The chaos workers' options: short leases (3 s), so that work a crash took
# with it comes back within seconds.
from drills.chaos.worker import connect, runtime_options
from drills.failover import workload


def main(url: str, schema: str, log_file: str, ready_file: str) -> None:
    duroxide.init_tracing(log_file, log_level="warn")
    workload.RunLog.path = workload.runs_file(log_file)
    runtime = duroxide.Runtime(connect(url, schema), runtime_options())
    workload.register_with_runtime(runtime)
    runtime.start()
    Path(ready_file).touch()
    while True:  # until the drill kills it
        time.sleep(60)


if __name__ == "__main__":
    main(*sys.argv[1:5])
