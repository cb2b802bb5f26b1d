"""Instances an operator finds and acts on: by status, name and time, a page
at a time (those known only by their queued messages too), and cancelled as
the duroxide client cancels them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from provider.client.arguments import check_instance_id
from provider.client.orchestration_queue import OrchestrationQueue
from provider.client.plans import Plan
from provider.errors import InvalidInput
from provider.shapes import runtime_work_item_text
from provider.types import INSTANCE_STATUSES, InstanceSummary

MAX_PAGE = 10_000


class InstanceControl(OrchestrationQueue):
    def find_instances(
        self,
        *,
        status: str | None = None,
        orchestration_name: str | None = None,
        started_after: datetime | None = None,
        started_before: datetime | None = None,
        updated_after: datetime | None = None,
        updated_before: datetime | None = None,
        after: str | None = None,
        limit: int = 100,
        instance_id: str | None = None,
        id_prefix: str | None = None,
        name_contains: str | None = None,
    ) -> Plan[list[InstanceSummary]]:
        """Instances matching every filter given, newest first. For the next
        page, pass the last instance_id of this one as `after`; `instance_id`
        finds that one instance (a list of one, or empty). `id_prefix` matches
        the start of the id, `name_contains` a part of the orchestration's name
        in either case (revision 0028: taskhub_search_instances; the other
        filters run taskhub_find_instances, which every revision since 0016 has)."""
        if status is not None and status not in INSTANCE_STATUSES:
            raise InvalidInput(
                "find_instances", f"status must be one of {', '.join(INSTANCE_STATUSES)}"
            )
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInput("find_instances", f"limit must be between 1 and {MAX_PAGE}")
        # Only a search by prefix or name part needs revision 0028's function.
        searching: dict[str, Any] = {
            name: value
            for name, value in (("p_id_prefix", id_prefix), ("p_name_contains", name_contains))
            if value
        }
        rows = yield from self._call(
            "taskhub_search_instances" if searching else "taskhub_find_instances",
            **searching,
            p_status=status,
            p_orchestration_name=orchestration_name,
            p_started_after=started_after,
            p_started_before=started_before,
            p_updated_after=updated_after,
            p_updated_before=updated_before,
            p_after_instance_id=after,
            p_limit=limit,
            p_instance_id=instance_id,
        )
        return [InstanceSummary(**row) for row in rows]

    def cancel_instance(self, instance_id: str, reason: str | None = None) -> Plan[None]:
        """Ask the instance's orchestration to end as cancelled: the CancelInstance
        work item the duroxide client's cancel_instance writes (the runtime ends
        a running instance at its next turn, and ignores an ended one)."""
        check_instance_id("cancel_instance", instance_id)
        if reason is not None and not isinstance(reason, str):
            raise InvalidInput("cancel_instance", "reason must be a text")
        item = {"CancelInstance": {"instance": instance_id, "reason": reason or ""}}
        yield from self.enqueue_orchestrator_work(instance_id, runtime_work_item_text(item))
