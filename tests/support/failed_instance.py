"""A failed instance as the released runtime leaves one: for the on-call
views' tests ("why did it fail?", issue 40)."""

from __future__ import annotations

from typing import Any

from devkit.workloads.work_items import event, metadata, orchestration_started, start_orchestration
from provider import TaskHub

DECLINED = "card declined: " + "the issuer said no. " * 12


def failed_order(hub: TaskHub, instance: str) -> None:
    """An order whose Charge activity failed twice (retried once), which then
    failed the orchestration with an error longer than any table cell."""
    declined = DECLINED

    def failed(event_id: int, source: int, message: str) -> dict[str, Any]:
        details = {"Application": {"kind": "ActivityFailed", "message": message, "retryable": True}}
        failure = event(event_id, instance, "ActivityFailed", details=details)
        return {**failure, "source_event_id": source}

    hub.enqueue_for_orchestrator(start_orchestration(instance))
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None
    ending = {
        "Application": {"kind": "OrchestrationFailed", "message": declined, "retryable": False}
    }
    hub.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[
            orchestration_started(instance),
            event(2, instance, "ActivityScheduled", name="Charge", input="{}"),
            failed(3, 2, "card declined"),
            event(4, instance, "ActivityScheduled", name="Charge", input="{}"),
            failed(5, 4, declined),
            event(6, instance, "OrchestrationFailed", details=ending),
        ],
        metadata=metadata(status="Failed", output=declined),
    )
