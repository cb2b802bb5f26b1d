"""Instances an operator finds and acts on: inspect instances, cancel,
restart, raise-event."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any

import typer

from provider.cli.action_commands import cutoff_ms
from provider.cli.failures import end_on_refusal
from provider.cli.hubs import hub_session, require_hub
from provider.cli.inspect_commands import inspect_app
from provider.cli.options import (
    NOT_FOUND,
    PROBLEMS,
    USAGE,
    AsJson,
    Schema,
    Url,
    Yes,
    confirm,
    database_url,
    fail,
    print_json,
    print_rows,
    say,
)
from provider.client.on_connection import OnConnection
from provider.client.pooling import ONE_SHOT_POOLER
from provider.client.task_hub import TaskHub
from provider.errors import TaskHubError
from provider.types import INSTANCE_STATUSES, InstanceSummary

Status = Enum("Status", {status: status for status in INSTANCE_STATUSES}, type=str)  # type: ignore[misc]
# The statuses of an instance that has ended: nothing left to cancel.
ENDED = ("Completed", "Failed", "ContinuedAsNew")

When = Annotated[
    str | None, typer.Option(help="30d, 12h, 45m, 90s ago, or an ISO 8601 time", show_default=False)
]


def _moment(when: str | None) -> datetime | None:
    return None if when is None else datetime.fromtimestamp(cutoff_ms(when) / 1000, tz=UTC)


def _row(found: InstanceSummary) -> dict[str, Any]:
    return {
        "instance_id": found.instance_id,
        "orchestration_name": found.orchestration_name,
        "status": found.status,
        "created_at": found.created_at.isoformat(),
        "updated_at": found.updated_at.isoformat(),
        "queued_messages": found.queued_messages,
        "max_attempt_count": found.max_attempt_count,
        "parent_instance_id": found.parent_instance_id,
    }


def _table_row(found: InstanceSummary) -> dict[str, Any]:
    """The few columns a terminal has room for (--json has them all)."""
    return {
        "instance": found.instance_id,
        "status": found.status,
        "orchestration": found.orchestration_name,
        "started": f"{found.created_at:%Y-%m-%d %H:%M:%S}",
        "updated": f"{found.updated_at:%Y-%m-%d %H:%M:%S}",
        "queued": found.queued_messages,
        "deliveries": found.max_attempt_count,
    }


@inspect_app.command("instances")
def instances(
    url: Url = None,
    schema: Schema = "public",
    status: Annotated[
        Status | None,
        typer.Option(case_sensitive=False, help="only instances with this status (any case)"),
    ] = None,
    name: Annotated[str | None, typer.Option(help="only this orchestration")] = None,
    name_contains: Annotated[
        str | None, typer.Option(help="orchestrations whose name has this part (either case)")
    ] = None,
    id_prefix: Annotated[str | None, typer.Option(help="instance IDs that start so")] = None,
    started_after: When = None,
    started_before: When = None,
    updated_after: When = None,
    updated_before: When = None,
    after: Annotated[
        str | None, typer.Option(help="the next page: the last instance ID of this one")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="at most this many")] = 50,
    as_json: AsJson = False,
) -> None:
    """Instances by status, orchestration and time, newest first, a page at a
    time; Pending: known only by queued messages (not started)."""
    # Every argument read before connecting: a typo is exit 2 with the database down too.
    started = (_moment(started_after), _moment(started_before))
    updated = (_moment(updated_after), _moment(updated_before))
    target = database_url(url)
    require_hub(target, schema)
    with TaskHub.connect(target, schema, pool_min_size=1, pooler=ONE_SHOT_POOLER) as hub:
        found = hub.find_instances(
            status=None if status is None else status.value,
            orchestration_name=name,
            name_contains=name_contains,
            id_prefix=id_prefix,
            started_after=started[0],
            started_before=started[1],
            updated_after=updated[0],
            updated_before=updated[1],
            after=after,
            limit=limit,
        )
    next_after = found[-1].instance_id if len(found) == limit else None
    if as_json:
        print_json({"instances": [_row(i) for i in found], "next_after": next_after})
        return
    print_rows("instances", [_table_row(i) for i in found])
    if next_after is not None:
        say(f"more: --after {next_after}")


def _status_unless_ended(hub: OnConnection, instance_id: str, if_ended: str) -> str:
    """The instance's status (Pending: known only by its messages); exit 3 if
    there is no such instance, exit 1 (saying `if_ended`) if it has ended."""
    status = hub.run(hub.plans.instance_status(instance_id))
    if status is None:
        fail(NOT_FOUND, f"instance {instance_id} not found")
    if status in ENDED:
        fail(PROBLEMS, f"instance {instance_id} already ended ({status}): {if_ended}")
    return status


def register(app: typer.Typer) -> None:
    @app.command()
    def cancel(
        instance_id: Annotated[str, typer.Argument(metavar="ID")],
        url: Url = None,
        schema: Schema = "public",
        reason: Annotated[str, typer.Option(help="recorded in the instance's failure")] = (
            "cancelled by an operator"
        ),
        yes: Yes = False,
        as_json: AsJson = False,
    ) -> None:
        """Cancel a running (or not yet started) instance, as the duroxide
        client does: it ends as Failed (cancelled) at its next turn, and its
        sub-orchestrations with it."""
        # The hub builds the CancelInstance and refuses an instance that ended
        # meanwhile (taskhub_cancel_instance): the operator writes no message.
        with hub_session(database_url(url), schema) as hub:
            status = _status_unless_ended(hub, instance_id, "nothing to cancel")
            confirm(f"Cancel instance {instance_id} ({status})?", yes)
            try:
                status = hub.run(hub.plans.cancel(instance_id, reason))
            except TaskHubError as error:
                end_on_refusal(error)
                raise
        if as_json:
            print_json({"instance_id": instance_id, "cancel_requested": True, "status": status})
        else:
            say(f"cancel of {instance_id} queued: it ends at its next turn")

    @app.command()
    def restart(
        instance_id: Annotated[str, typer.Argument(metavar="ID")],
        new_id: Annotated[
            str | None,
            typer.Option(
                "--new-id",
                help="run it under this new id (the old one stays as it was); "
                "without it, under its own id as its next execution",
            ),
        ] = None,
        input_json: Annotated[
            str | None,
            typer.Option(
                "--input",
                metavar="JSON",
                help="another input, as JSON (default: the one it last ran with)",
            ),
        ] = None,
        reason: Annotated[
            str | None, typer.Option(help="why, kept with the restart (inspect instance)")
        ] = None,
        execution: Annotated[
            int | None,
            typer.Option(
                min=1,
                help="the ended execution to restart (default: the latest); "
                "the same command again then does nothing",
            ),
        ] = None,
        url: Url = None,
        schema: Schema = "public",
        yes: Yes = False,
        as_json: AsJson = False,
    ) -> None:
        """Run an ended (completed or failed) instance again: the same
        orchestration, version, priority and labels, from its input unless
        --input says otherwise (the application's to give: not an operator's).
        The restart is recorded (who, from which outcome, why); the earlier
        run stays readable. A running instance is refused."""
        value: Any = ...
        if input_json is not None:
            try:
                value = json.loads(input_json)
            except ValueError:
                fail(USAGE, "--input must be JSON (a text is quoted: '\"text\"')")
        with hub_session(database_url(url), schema) as hub:
            status = hub.run(hub.plans.instance_status(instance_id))
            if status is None:
                fail(NOT_FOUND, f"instance {instance_id} not found: nothing to restart")
            into = f"as {new_id}" if new_id else "under its own id"
            confirm(f"Restart instance {instance_id} ({status}) {into}?", yes)
            try:
                done = hub.run(
                    hub.plans.restart(
                        instance_id,
                        new_instance_id=new_id,
                        input=value,
                        reason=reason,
                        execution_id=execution,
                    )
                )
            except TaskHubError as error:
                end_on_refusal(error)
                raise
        if as_json:
            print_json(
                {
                    "instance_id": done.instance_id,
                    "from_execution_id": done.from_execution_id,
                    "from_status": done.from_status,
                    "new_instance_id": done.new_instance_id,
                    "new_execution_id": done.new_execution_id,
                    "repeated": done.repeated,
                }
            )
            return
        target = (
            f"as {done.new_instance_id}"
            if done.new_instance_id != done.instance_id
            else f"as its execution {done.new_execution_id}"
        )
        ended = f"{done.from_status.lower()} in execution {done.from_execution_id}"
        if done.repeated:
            say(f"{instance_id} was restarted {target} already ({ended}): nothing done")
        else:
            say(f"{instance_id} restarted {target} (it had {ended})")

    @app.command("raise-event")
    def raise_event(
        instance_id: Annotated[str, typer.Argument(metavar="ID")],
        name: Annotated[str, typer.Argument(metavar="NAME")],
        data: Annotated[
            str, typer.Argument(metavar="[DATA]", help="the event's data as JSON, e.g. '\"yes\"'")
        ] = "null",
        url: Url = None,
        schema: Schema = "public",
        as_json: AsJson = False,
    ) -> None:
        """Raise an external event for an instance, as the duroxide client's
        raise_event: the orchestration's wait for NAME receives DATA."""
        try:
            value = json.loads(data)
        except ValueError:
            fail(USAGE, f"DATA must be JSON (a text is quoted: '\"{data}\"')")
        # The hub builds the ExternalRaised, and refuses an instance that does
        # not exist or has ended (taskhub_raise_event).
        with hub_session(database_url(url), schema) as hub:
            try:
                hub.run(hub.plans.raise_event(instance_id, name, value))
            except TaskHubError as error:
                end_on_refusal(error)
                raise
        if as_json:
            print_json({"instance_id": instance_id, "event": name, "raised": True})
        else:
            say(f"event {name} raised for {instance_id}")
