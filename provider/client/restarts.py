"""Restart an ended instance, as plans: the hub runs it again
(taskhub_restart_instance) under its own id, as its next execution, or
under a new id, from the input it last ran with unless another is given,
and keeps a record of who restarted what, from which outcome, and why
(taskhub_read_restarts). `Client.restart`, `taskhub-pg restart` and the
dashboard's restart run these plans (docs/ops.md, "An orchestration
failed")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from provider.client.arguments import check_instance_id, check_text, check_work_item_size
from provider.client.instance_requests import refusals_typed
from provider.client.plans import Plan, Plans
from provider.errors import InvalidInput
from provider.shapes import json_dumps
from provider.types import Restart

MAX_REASON_BYTES = 2000
MAX_BIGINT = 2**63 - 1


class RestartPlans(Plans):
    def restart(
        self,
        instance_id: str,
        *,
        new_instance_id: str | None = None,
        input: Any = ...,
        reason: str | None = None,
        execution_id: int | None = None,
    ) -> Plan[Restart]:
        """Run the ended (Completed or Failed) instance again, with the same
        orchestration, version, priority and labels: under `new_instance_id`
        (the old instance stays as it was, and the record links them), or
        under its own id as its next execution (its earlier executions stay
        readable). From the input its last execution ran with, unless
        `input` is given (any JSON value, None included: the application's
        to give, as its runtime role or the owner; an operator role may
        not). New ids of the forms the scheduler and the runtime give
        (schedule:NAME:TICK, PARENT::sub::N) are refused. Refused when the
        instance does not exist (InstanceNotFound), has not ended
        (InstanceRunning) or the new id exists (StartConflict).

        A request is the instance, its ended execution (`execution_id`;
        None: the latest) and the id it runs under. Made again, it writes
        nothing and returns the first restart (`repeated`); so does a
        request without `execution_id` while the execution its restart made
        still runs. Name the execution to make a retry exact."""
        check_instance_id("restart", instance_id)
        if new_instance_id is not None:
            check_instance_id("restart", new_instance_id)
        input_text = None
        if input is not ...:
            input_text = json_dumps("restart", "input", input)
            check_work_item_size("restart", "the input", input_text)
        if execution_id is not None and (
            not isinstance(execution_id, int)
            or isinstance(execution_id, bool)
            or not 1 <= execution_id <= MAX_BIGINT
        ):
            raise InvalidInput("restart", "execution_id must be a whole number from 1")
        if reason is not None:
            check_text("restart", "reason", reason)
            if len(reason.encode()) > MAX_REASON_BYTES:
                raise InvalidInput("restart", f"reason has at most {MAX_REASON_BYTES} bytes")
        # Another input is the application's to give: a function of its own,
        # which operator roles are not granted.
        arguments: dict[str, Any] = {
            "p_instance_id": instance_id,
            "p_new_instance_id": new_instance_id,
            "p_reason": reason,
            "p_from_execution_id": execution_id,
        }
        if input_text is None:
            call = self._call("taskhub_restart_instance", **arguments)
        else:
            call = self._call(
                "taskhub_restart_instance_with_input", p_input=input_text, **arguments
            )
        rows = yield from refusals_typed(call)
        row = rows[0]
        return Restart(
            instance_id=instance_id,
            from_execution_id=int(row["out_from_execution_id"]),
            from_status=str(row["out_from_status"]),
            new_instance_id=str(row["out_instance_id"]),
            new_execution_id=int(row["out_execution_id"]),
            repeated=bool(row["out_repeated"]),
        )

    def restarts(self, instance_id: str) -> Plan[list[Restart]]:
        """The restarts the instance took part in, as the one restarted or
        the one it was restarted into, oldest first."""
        check_instance_id("restarts", instance_id)
        rows = yield from self._call("taskhub_read_restarts", p_instance_id=instance_id)
        return [restart_of_row(row) for row in rows]


def restart_of_row(row: Mapping[str, Any]) -> Restart:
    """A row of taskhub_read_restarts."""
    return Restart(
        id=int(row["id"]),
        instance_id=row["instance_id"],
        from_execution_id=int(row["from_execution_id"]),
        from_status=row["from_status"],
        from_output=row["from_output"],
        new_instance_id=row["new_instance_id"],
        new_execution_id=int(row["new_execution_id"]),
        input=row["input"],
        restarted_at=row["restarted_at"],
        restarted_by=row["restarted_by"],
        reason=row["reason"],
    )
