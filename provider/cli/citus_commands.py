"""taskhub-pg citus: where a hub distributed on Citus is, and moving it
(provider/operations/citus.py, docs/scale-out.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from provider.citus_placement import Node, parse_node
from provider.cli.hubs import hub_connection
from provider.cli.options import (
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
    say,
)
from provider.deploy import privileged_session
from provider.masking import masked, passwords_of
from provider.operations import citus

citus_app = typer.Typer(
    help="Hubs on a Citus cluster: where each is, and moving one to another worker.",
    no_args_is_help=True,
)


def _node(text: str) -> Node:
    try:
        return parse_node(text)
    except ValueError as error:
        fail(USAGE, f"--to: {error}", "e.g. --to worker-2:5432, as pg_dist_node names it")


def _refused(error: citus.CitusRefused) -> None:
    fail(PROBLEMS, f"nothing changed: {error}")


@citus_app.command("placement")
def placement(url: Url = None, schema: Schema = "public", as_json: AsJson = False) -> None:
    """The worker that holds the hub, and the URL that reaches it there (the
    coordinator's URL with the worker's host and port). A runtime or worker
    given that URL makes each call in one hop; given the coordinator's, each
    statement of a call is a round trip to the worker."""
    target = database_url(url)
    with hub_connection(target, schema, privileged_ok=True):
        pass
    try:
        with privileged_session.connect(target, autocommit=True, prepare_threshold=None) as conn:
            found = citus.placement(conn, target, schema)
    except citus.CitusRefused as error:
        _refused(error)
    shown = masked(found.url, passwords_of(target))
    if as_json:
        print_json({**found.as_dict(), "url": shown})
    else:
        say(f"schema {schema}: on {found.node}")
        say(f"url: {shown}")


@citus_app.command("move")
def move(
    to: Annotated[str, typer.Option("--to", help="the worker, HOST:PORT as pg_dist_node has it")],
    url: Url = None,
    schema: Schema = "public",
    yes: Yes = False,
    as_json: AsJson = False,
) -> None:
    """Move the hub to another worker (citus_schema_move, block_writes) while
    its runtimes run: writes wait while its tables are copied, nothing is
    lost. Clients of the old worker's URL keep working, one hop longer, until
    they reconnect (taskhub-pg citus placement gives the new URL). Asks first
    unless --yes; without a terminal it refuses (exit 5)."""
    target = database_url(url)
    node = _node(to)
    # The move copies the hub's tables, whose triggers, defaults and checks
    # are its owner's: the owner moves it, never a privileged session.
    with hub_connection(target, schema):
        pass
    confirm(f"Move schema {schema} to {node}? Its writes wait while it is copied.", yes)
    try:
        with privileged_session.connect(target, autocommit=True, prepare_threshold=None) as conn:
            done = citus.move(conn, schema, node)
    except citus.CitusRefused as error:
        _refused(error)
    if as_json:
        print_json(done.as_dict())
    else:
        say(done.summary())


def register(app: typer.Typer) -> None:
    app.add_typer(citus_app, name="citus")
