"""taskhub-pg inspect: the runbook's reads (docs/ops.md), as tables or JSON."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import psycopg
import typer

from provider.cli.options import (
    NOT_FOUND,
    AsJson,
    Schema,
    Url,
    database_url,
    fail,
    print_json,
    print_rows,
)
from provider.client import runbook

Limit = Annotated[int, typer.Option(min=1, help="at most this many rows")]

inspect_app = typer.Typer(help="Read a hub's state: the runbook's views.", no_args_is_help=True)


def _show(view: str, title: str, url: str | None, schema: str, limit: int, as_json: bool) -> None:
    with psycopg.connect(database_url(url), autocommit=True) as conn:
        rows = runbook.read_view(conn, schema, view, limit)
    if as_json:
        print_json(rows)
    else:
        print_rows(title, rows)


@inspect_app.command()
def queues(url: Url = None, schema: Schema = "public", as_json: AsJson = False) -> None:
    """Per queue: ready, scheduled, leased, oldest ready age, attempts, dead letters."""
    _show("queues", "queues", url, schema, 10, as_json)


@inspect_app.command()
def leases(
    url: Url = None, schema: Schema = "public", limit: Limit = 100, as_json: AsJson = False
) -> None:
    """Every lease held now, soonest to expire first (negative: expired)."""
    _show("leases", "leases", url, schema, limit, as_json)


@inspect_app.command()
def poison(
    url: Url = None, schema: Schema = "public", limit: Limit = 100, as_json: AsJson = False
) -> None:
    """Messages handed out again and again without an ack."""
    _show("poison", "poison candidates", url, schema, limit, as_json)


@inspect_app.command("dead-letters")
def dead_letters(
    url: Url = None, schema: Schema = "public", limit: Limit = 100, as_json: AsJson = False
) -> None:
    """Messages moved aside after too many deliveries, newest first."""
    _show("dead-letters", "dead letters", url, schema, limit, as_json)


@inspect_app.command()
def stuck(
    url: Url = None, schema: Schema = "public", limit: Limit = 100, as_json: AsJson = False
) -> None:
    """Running instances with nothing queued, scheduled or leased."""
    _show("stuck", "stuck instances", url, schema, limit, as_json)


@inspect_app.command()
def instance(
    instance_id: Annotated[str, typer.Argument(metavar="ID")],
    url: Url = None,
    schema: Schema = "public",
    as_json: AsJson = False,
) -> None:
    """One instance: its executions, queued messages, leases and dead letters."""
    with psycopg.connect(database_url(url), autocommit=True) as conn:
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
