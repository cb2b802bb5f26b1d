"""What anyone may ask of a running instance, written once: end as
cancelled, or take an external event. The hub builds the message (so an
operator writes no message of their choice) and refuses an instance that
does not exist (InstanceNotFound) or has ended (InstanceEnded). The
application's Client, `taskhub-pg cancel` and `raise-event`, and the
dashboard's cancel all run these plans."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from provider.client.arguments import check_instance_id, check_text, check_work_item_size
from provider.client.plans import Plan, Plans, Step
from provider.errors import InvalidInput, TaskHubError, refined
from provider.shapes import json_dumps
from provider.tracing import current_trace_context


class InstanceRequests(Plans):
    def cancel(self, instance_id: str, reason: str = "") -> Plan[str]:
        """Ask the instance to end as cancelled (taskhub_cancel_instance): the
        status it had. Refused when it does not exist or has ended."""
        check_instance_id("cancel", instance_id)
        if not isinstance(reason, str):
            raise InvalidInput("cancel", "reason must be a text")
        context = current_trace_context()
        status = yield from refusals_typed(
            self._scalar(
                "taskhub_cancel_instance",
                p_instance_id=instance_id,
                p_reason=reason,
                p_traceparent=context.traceparent if context else None,
                p_tracestate=context.tracestate if context else None,
            )
        )
        return str(status)

    def raise_event(self, instance_id: str, name: str, data: Any = None) -> Plan[str]:
        """Raise an external event (taskhub_raise_event): the status the
        instance had. Refused when it does not exist or has ended."""
        check_instance_id("raise_event", instance_id)
        check_text("raise_event", "name", name)
        data_text = json_dumps("raise_event", "data", data)
        check_work_item_size("raise_event", "the data", data_text)
        context = current_trace_context()
        status = yield from refusals_typed(
            self._scalar(
                "taskhub_raise_event",
                p_instance_id=instance_id,
                p_name=name,
                p_data=data_text,
                p_traceparent=context.traceparent if context else None,
                p_tracestate=context.tracestate if context else None,
            )
        )
        return str(status)


def refusals_typed(call: Generator[Step, Any, Any]) -> Generator[Step, Any, Any]:
    """The call's result; the hub's refusal as its own error (InstanceNotFound,
    InstanceEnded), whoever runs the plan."""
    try:
        return (yield from call)
    except TaskHubError as error:
        better = refined(error)
        if better is error:
            raise
        raise better from error
