"""What an application does with a hub, as plans (provider/client/plans.py):
start orchestrations once, read where they stand, cancel them and raise
events (the plans the CLI's verbs run: instance_requests.py), each refused
by the hub as the CLI's verbs are. Client and AsyncClient (app_client.py)
run them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from provider.client.arguments import (
    check_instance_id,
    check_text,
    check_version,
    check_work_item_size,
)
from provider.client.completion_wait import Progress
from provider.client.flow_control import FlowControlPlans
from provider.client.instance_control import InstanceControl
from provider.client.instance_requests import InstanceRequests
from provider.client.orchestration_queue import visible_after
from provider.client.plans import Plan
from provider.client.restarts import RestartPlans
from provider.client.schedules import SchedulePlans
from provider.client.steering import label_texts
from provider.config import TaskHubConfig
from provider.errors import InstanceNotFound, InvalidInput
from provider.shapes import runtime_work_item_text, start_orchestration_item
from provider.tracing import current_trace_context
from provider.types import (
    InstanceStatus,
    InstanceStatusName,
    InstanceSummary,
    StartRequest,
    StartResult,
    status_name,
)

# One call starts at most this many (the hub's own limit).
MAX_STARTS_PER_CALL = 100_000


class ApplicationPlans(SchedulePlans, FlowControlPlans, InstanceRequests, RestartPlans):
    def __init__(self, config: TaskHubConfig) -> None:
        super().__init__(config)
        self._instances = InstanceControl(config)

    def find(
        self,
        *,
        status: InstanceStatusName | None = None,
        orchestration_name: str | None = None,
        started_after: datetime | None = None,
        started_before: datetime | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
        after: str | None = None,
        limit: int = 100,
        id_prefix: str | None = None,
        name_contains: str | None = None,
    ) -> Plan[list[InstanceSummary]]:
        """Instances matching every filter given, newest first; `id_prefix`
        and `name_contains` need revision 0028 (InstanceControl.find_instances)."""
        found = yield from self._instances.find_instances(
            id_prefix=id_prefix,
            name_contains=name_contains,
            status=status,
            orchestration_name=orchestration_name,
            started_after=started_after,
            started_before=started_before,
            updated_after=updated_after,
            updated_before=updated_before,
            after=after,
            limit=limit,
        )
        return found

    def start(
        self,
        instance_id: str,
        orchestration: str,
        input: Any = None,
        version: str | None = None,
        priority: int = 0,
        labels: Mapping[str, str] | None = None,
    ) -> Plan[StartResult]:
        """start_many of one."""
        results = yield from self.start_many(
            [StartRequest(instance_id, orchestration, input, version, priority, labels)]
        )
        return results[0]

    def start_many(self, starts: Sequence[StartRequest]) -> Plan[list[StartResult]]:
        """Start each orchestration once, all or none, in one call of
        taskhub_start_orchestrations: a start of an instance that exists with
        the same orchestration and input is reported (started=False), one
        with another orchestration, version or input refuses the whole call
        (StartConflict). Every argument is checked before any SQL."""
        if not isinstance(starts, Sequence) or isinstance(starts, str):
            raise InvalidInput("start_many", "starts must be a sequence of StartRequest")
        if len(starts) > MAX_STARTS_PER_CALL:
            raise InvalidInput("start_many", f"at most {MAX_STARTS_PER_CALL} starts in one call")
        items = [_start_item("start_many", start) for start in starts]
        if not items:
            return []
        context = current_trace_context()
        arguments: dict[str, Any] = {
            "p_instance_ids": [start.instance_id for start in starts],
            "p_work_items": items,
            "p_visible_at": visible_after(0),
            "p_traceparent": context.traceparent if context else None,
            "p_tracestate": context.tracestate if context else None,
        }
        if any(start.steered for start in starts):
            # The hub checks the priority and the labels (taskhub_check_steering).
            rows = yield from self._call(
                "taskhub_start_steered_orchestrations",
                **arguments,
                p_steering=Jsonb([_steering("start_many", start) for start in starts]),
            )
        else:  # as 0027 and 0028 take it, so a client of 0029 starts on them
            rows = yield from self._call("taskhub_start_orchestrations", **arguments)
        return [StartResult(row["out_instance_id"], bool(row["out_started"])) for row in rows]

    def status(self, instance_id: str) -> Plan[InstanceStatus | None]:
        """Where the instance stands (None: no such instance): its status as
        find_instances reports it, and the output of an execution that ended."""
        progress = yield from self._progress("get_status", instance_id)
        return progress.status if progress is not None else None

    def wait_for_completion(self, instance_id: str) -> Plan[Progress]:
        """One read of Client.wait_for_completion: the status, and how many
        messages are queued for the instance (provider/client/completion_wait.py).
        InstanceNotFound when there is no such instance."""
        progress = yield from self._progress("wait_for_completion", instance_id)
        if progress is None:
            raise InstanceNotFound(
                "wait_for_completion", f"instance {instance_id} not found", "P0002"
            )
        return progress

    def set_wakeup_waiting(self, listener_pid: int) -> Plan[None]:
        """Tell the hub that the listener with this backend pid waits: the next
        message that becomes visible for an orchestration notifies it (a
        waiting wait_for_completion). Runs taskhub_set_waiting."""
        yield from self._call("taskhub_set_waiting", p_pid=listener_pid, p_waiting=True)

    def _progress(self, operation: str, instance_id: str) -> Plan[Progress | None]:
        check_instance_id(operation, instance_id)
        found = yield from self._instances.find_instances(instance_id=instance_id, limit=1)
        if not found:
            return None
        summary = found[0]
        status = status_name(summary.status)
        output = None
        if status not in ("Pending", "Running"):
            info = yield from self._call("get_instance_info", p_instance_id=instance_id)
            output = info[0]["output"] if info else None
        instance = InstanceStatus(
            instance_id=instance_id,
            status=status,
            orchestration_name=summary.orchestration_name,
            orchestration_version=summary.orchestration_version,
            execution_id=summary.current_execution_id,
            output=output,
            created_at=summary.created_at,
            updated_at=summary.updated_at,
        )
        return Progress(instance, summary.queued_messages)


def _steering(operation: str, start: StartRequest) -> dict[str, Any] | None:
    """A start's priority and labels as taskhub_start_steered_orchestrations
    takes them; their rules are the hub's, checked there."""
    if not start.steered:
        return None
    labels = label_texts(operation, start.priority, start.labels)
    return {"priority": start.priority, "labels": labels}


def _start_item(operation: str, start: object) -> str:
    """The StartOrchestration of one request, checked as start_orchestration checks it."""
    if not isinstance(start, StartRequest):
        raise InvalidInput(operation, f"each start must be a StartRequest, got {start!r}"[:200])
    check_instance_id(operation, start.instance_id)
    check_text(operation, "orchestration", start.orchestration)
    check_version(operation, start.version)
    item = runtime_work_item_text(
        start_orchestration_item(start.instance_id, start.orchestration, start.input, start.version)
    )
    check_work_item_size(operation, "the input", item)
    return item
