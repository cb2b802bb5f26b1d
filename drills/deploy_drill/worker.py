"""One drill worker process: the chaos workload's runtime (drills.chaos.worker)
plus an orchestration that waits for an event the application raises.

    python -m drills.deploy_drill.worker URL SCHEMA LOG_FILE READY_FILE
"""

from __future__ import annotations

import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import duroxide

from drills.chaos import workload
from drills.chaos.worker import connect, runtime_options

WAITER = "DrillWaiter"
EVENT = "Go"


WAITING = "waiting"


def waiter(ctx: Any, n: int) -> Generator[Any, Any, Any]:
    """Ends when the application raises EVENT (during a deploy, as likely as
    not). The custom status tells the application it has subscribed: an
    event raised before would be dropped."""
    ctx.set_custom_status(WAITING)
    data = yield ctx.wait_for_event(EVENT)
    return {"n": n, "event": data}


def main(url: str, schema: str, log_file: str, ready_file: str) -> None:
    duroxide.init_tracing(log_file, log_level="warn")
    runtime = duroxide.Runtime(connect(url, schema), runtime_options())
    workload.register(runtime)
    runtime.register_orchestration(WAITER, waiter)
    runtime.start()
    Path(ready_file).touch()
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main(*sys.argv[1:5])
