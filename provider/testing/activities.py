"""run_activity: one activity handler run by a real worker, on a real lease."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from provider.client.instance_report import InstanceReports
from provider.client.task_hub import TaskHub
from provider.types import JsonObject
from provider.worker.activity_worker import ActivityWorker
from provider.worker.core import Handler

POLL_S = 0.02


@dataclass(frozen=True)
class ActivityOutcome:
    """What the handler's run left on the orchestrator queue."""

    completion: JsonObject  # the ActivityCompleted or ActivityFailed item
    result: Any = None  # the decoded result, when it completed
    error: str | None = None  # the failure's message, when it failed

    @property
    def completed(self) -> bool:
        return self.error is None


def _activity_item(instance: str, name: str, value: Any) -> JsonObject:
    return {
        "ActivityExecute": {
            "instance": instance,
            "execution_id": 1,
            "id": 1,
            "name": name,
            "input": json.dumps(value),
        }
    }


def _outcome(completion: JsonObject) -> ActivityOutcome:
    if "ActivityCompleted" in completion:
        result = completion["ActivityCompleted"].get("result")
        return ActivityOutcome(completion, result=json.loads(result) if result else None)
    details = completion.get("ActivityFailed", {}).get("details", {})
    # {"Application": {"message": ...}} or {"Poison": {...}}: the one entry's message.
    failure: Any = next(iter(details.values()), {}) if isinstance(details, dict) else {}
    message = failure.get("message") if isinstance(failure, dict) else None
    return ActivityOutcome(completion, error=str(message or details))


def run_activity(
    hub: TaskHub,
    handler: Handler | Callable[..., Any],
    value: Any = None,
    *,
    name: str = "Activity",
    lock_timeout_ms: int = 30_000,
    timeout_s: float = 30.0,
) -> ActivityOutcome:
    """Queue one activity, let an ActivityWorker with just this handler run it
    (its lease renewed as in production, a third of the lock), and return
    what it acked. Raises TimeoutError when nothing was acked in timeout_s."""
    instance = f"test-{uuid.uuid4().hex[:12]}"
    worker = ActivityWorker(hub, concurrency=1, lock_timeout_ms=lock_timeout_ms)
    worker.register(name, handler)
    hub.enqueue_worker_work(_activity_item(instance, name, value))
    deadline = time.monotonic() + timeout_s
    reports = InstanceReports(hub.config)
    with worker:
        while time.monotonic() < deadline:
            for item in hub.run(reports.orchestrator_messages(instance)):
                if "ActivityCompleted" in item or "ActivityFailed" in item:
                    return _outcome(item)
            time.sleep(POLL_S)
    raise TimeoutError(f"activity {name} was not acked within {timeout_s} s")
