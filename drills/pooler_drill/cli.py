"""The command line through the pooled URL: a few read verbs and one action
(raise-event on an instance that waits), each a `python -m provider`
process as an operator would run it. An exit code other than 0 is an error;
its stderr lines are the message. Other stderr lines are counted as warnings."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from devkit.workloads.work_items import metadata, orchestration_started
from drills.pooler_drill.tally import NUMBER, Tally
from provider import TaskHub

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60.0
WAITING = "DrillWaiting"


@dataclass
class CliReport:
    tally: Tally = field(default_factory=Tally)
    verbs: list[str] = field(default_factory=list)
    warnings: Counter[str] = field(default_factory=Counter)


def taskhub_pg(
    args: list[str], url: str, environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`taskhub-pg ARGS --url URL` from this checkout (`environment` added)."""
    return subprocess.run(
        [sys.executable, "-m", "provider", *args, "--url", url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "DATABASE_URL": "", **(environment or {})},
    )


def waiting_instance(direct_url: str, schema: str, instance: str) -> None:
    """An instance that has started and waits (Running), set up directly."""
    with TaskHub.connect(direct_url, schema) as hub:
        hub.start_orchestration(instance, WAITING)
        while (item := hub.fetch_orchestration_item(30_000)) is not None:
            if item.history:
                hub.abandon_orchestration_item(item.lock_token)  # not this part's
                continue
            hub.ack_orchestration_item(
                item.lock_token,
                item.execution_id,
                history_delta=[orchestration_started(item.instance_id, WAITING)],
                metadata=metadata(WAITING),
            )
            if item.instance_id == instance:
                return


def run(url: str, direct_url: str, schema: str) -> CliReport:
    report = CliReport()
    instance = f"{schema}-cli-waiting"
    waiting_instance(direct_url, schema, instance)
    verbs = [
        ["status", "--schema", schema],
        ["inspect", "queues", "--schema", schema],
        ["inspect", "instances", "--schema", schema, "--limit", "5"],
        ["inspect", "instance", instance, "--schema", schema],
        ["raise-event", instance, "Go", '"from the CLI"', "--schema", schema],
    ]
    for verb in verbs:
        report.verbs.append(" ".join(verb[:2]))
        report.tally.called()
        done = taskhub_pg(verb, url)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        if done.returncode != 0:
            report.tally.failed(f"exit {done.returncode} from {verb[0]}: " + " ".join(lines)[:200])
            continue
        for line in lines:
            report.warnings[NUMBER.sub("N", line)[:200]] += 1
    return report
