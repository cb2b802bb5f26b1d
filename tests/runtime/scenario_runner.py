"""The scenario groups with whichever duroxide this interpreter has, on one
hub, reported as one JSON object in a file (the runtime logs to stdout):

    python -m tests.runtime.scenario_runner URL SCHEMA REPORT

The standard library and duroxide only: test_released_runtimes.py runs it in
a virtualenv that holds another release alone (devkit/released_runtimes.py).
The report names the release, each group's failure (null: passed), a refusal
at startup, and the status of every instance the hub holds at the end.
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from importlib.metadata import version
from pathlib import Path
from typing import Any

import duroxide

from tests.runtime import scenarios


def run(url: str, schema: str) -> dict[str, Any]:
    report: dict[str, Any] = {"duroxide": version("duroxide"), "refused": None, "groups": {}}
    try:
        provider = duroxide.PostgresProvider.connect_with_schema(url, schema)
    except Exception as exc:  # the runtime's own startup check, as a user sees it
        report["refused"] = f"{type(exc).__name__}: {exc}"
        return report
    runtime = duroxide.Runtime(provider, duroxide.RuntimeOptions(**scenarios.RUNTIME_OPTIONS))
    scenarios.register(runtime)
    runtime.start()
    started = time.monotonic()
    try:
        client = duroxide.Client(provider)
        for name, group in scenarios.GROUPS.items():
            report["groups"][name] = _outcome(group, client)
        report["seconds"] = round(time.monotonic() - started, 2)
        report["instances"] = _statuses(client)
    finally:
        runtime.shutdown(timeout_ms=2_000)
    return report


def _outcome(group: scenarios.Group, client: Any) -> str | None:
    """None when the group passed, else what failed (a group goes on to the
    next one: the report names every failure, not the first)."""
    try:
        group(client)
    except Exception:
        return traceback.format_exc(limit=3)[-1500:]
    return None


def _statuses(client: Any) -> dict[str, list[str]]:
    """Every instance the hub holds, by its status."""
    named: dict[str, list[str]] = {}
    for instance in sorted(client.list_all_instances()):
        named.setdefault(client.get_status(instance).status, []).append(instance)
    return named


def main(argv: list[str]) -> int:
    url, schema, report = argv
    Path(report).write_text(json.dumps(run(url, schema)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
