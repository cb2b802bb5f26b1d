"""taskhub-pg inspect: the runbook's reads (docs/ops.md), as tables or JSON."""

from __future__ import annotations

from typing import Annotated

import typer

from provider.cli.failures import end_on_refusal
from provider.cli.hubs import hub_session
from provider.cli.options import (
    AsJson,
    Schema,
    Url,
    database_url,
    print_json,
    print_rows,
    say,
)
from provider.cli.plain import under
from provider.errors import TaskHubError
from provider.hub_rows import InstanceFailure, plain
from provider.types import Restart

Limit = Annotated[int, typer.Option(min=1, help="at most this many rows")]

inspect_app = typer.Typer(help="Read a hub's state: the runbook's views.", no_args_is_help=True)


# The verbs that print one view: (verb, title, help).
VIEW_VERBS = (
    ("queues", "queues", "Per queue: ready, scheduled, leased, oldest ready age, attempts."),
    ("leases", "leases", "Every lease held now, soonest to expire first (negative: expired)."),
    ("poison", "poison candidates", "Messages handed out again and again without an ack."),
    ("dead-letters", "dead letters", "Messages moved aside after too many deliveries."),
    ("stuck", "stuck instances", "Running instances with nothing queued, scheduled or leased."),
)


def _view_verb(view: str, title: str, text: str) -> None:
    def show(
        url: Url = None, schema: Schema = "public", limit: Limit = 100, as_json: AsJson = False
    ) -> None:
        with hub_session(database_url(url), schema) as hub:
            rows = plain(hub.run(hub.plans.read_view(view, limit)))
        if as_json:
            print_json(rows)
        else:
            print_rows(title, rows)

    show.__doc__ = text
    inspect_app.command(view)(show)


for verb in VIEW_VERBS:
    _view_verb(*verb)


def error_message(details: object) -> str:
    """The message of a runtime ErrorDetails ({"Application": {"message": ...}}),
    or the details as they are."""
    if isinstance(details, dict) and len(details) == 1:
        (inner,) = details.values()
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return str(details)


def print_failure(failure: InstanceFailure) -> None:
    """Why the instance failed, in full (never cut to a cell's width)."""
    say("")
    say(f"failure (execution {failure.execution_id})")
    say(under("  error: ", failure.error))
    for step in failure.failed_steps:
        scheduled = f"scheduled {step.attempts} time{'s' if step.attempts != 1 else ''}"
        say(under(f"  {step.kind} {step.name} ({scheduled}): ", error_message(step.details)))


@inspect_app.command()
def instance(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    url: Url = None,
    schema: Schema = "public",
    as_json: AsJson = False,
) -> None:
    """One instance: its executions, queued messages, leases and dead letters."""
    with hub_session(database_url(url), schema) as hub:
        try:
            report = hub.run(hub.plans.read_instance(instance_id))
        except TaskHubError as error:
            end_on_refusal(error)
            raise
    shown = plain(report)
    if as_json:
        print_json(shown)
        return
    print_rows(f"instance {instance_id}", [shown["instance"]])
    print_rows("executions", shown["executions"])
    print_rows("queued messages", shown["queued"])
    print_rows("leases", shown["leases"])
    print_rows("dead letters", shown["dead_letters"])
    if report.restarts:
        print_rows("restarts", [_restart_row(r) for r in report.restarts])
    if report.failure is not None:
        print_failure(report.failure)


def _restart_row(restart: Restart) -> dict[str, object]:
    """A restart as `inspect instance` prints it: from what, into what, who, why."""
    return {
        "from": f"{restart.instance_id} execution {restart.from_execution_id}"
        f" ({restart.from_status})",
        # Why the run it replaced ended (whole in --json, as from_output).
        "ended with": _last_line(restart.from_output),
        "into": f"{restart.new_instance_id} execution {restart.new_execution_id}",
        "by": restart.restarted_by,
        "at": restart.restarted_at,
        "why": restart.reason or "",
    }


def _last_line(text: str | None, most: int = 120) -> str:
    """A failure's last line (a traceback ends with the error itself), cut."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    line = lines[-1].strip() if lines else ""
    return line if len(line) <= most else line[: most - 1] + "…"
