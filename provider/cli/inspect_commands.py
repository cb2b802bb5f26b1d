"""taskhub-pg inspect: the runbook's reads (docs/ops.md), as tables or JSON."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

import typer

from provider.cli.hubs import hub_connection
from provider.cli.options import (
    NOT_FOUND,
    AsJson,
    Schema,
    Url,
    database_url,
    fail,
    print_json,
    print_rows,
    say,
)
from provider.operations import runbook

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
        with hub_connection(database_url(url), schema) as conn:
            rows = runbook.read_view(conn, schema, view, limit)
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


def print_failure(failure: dict[str, Any]) -> None:
    """Why the instance failed, in full (never cut to a cell's width)."""
    say(f"\nfailure (execution {failure['execution_id']})")
    say(f"  error: {failure['error']}")
    for step in failure["failed_steps"]:
        scheduled = f"scheduled {step['attempts']} time{'s' if step['attempts'] != 1 else ''}"
        say(f"  {step['kind']} {step['name']} ({scheduled}): {error_message(step['details'])}")


@inspect_app.command()
def instance(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    url: Url = None,
    schema: Schema = "public",
    as_json: AsJson = False,
) -> None:
    """One instance: its executions, queued messages, leases and dead letters."""
    with hub_connection(database_url(url), schema) as conn:
        try:
            report = runbook.read_instance(conn, schema, instance_id)
        except runbook.RunbookError as error:
            fail(NOT_FOUND, str(error))
    if as_json:
        print_json(asdict(report))
        return
    print_rows(f"instance {instance_id}", [report.instance])
    print_rows("executions", report.executions)
    print_rows("queued messages", report.queued)
    print_rows("leases", report.leases)
    print_rows("dead letters", report.dead_letters)
    if report.failure is not None:
        print_failure(report.failure)
