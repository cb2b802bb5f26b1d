"""taskhub-pg turn-form: how the hub's fetch hands over a turn (its form,
json or jsonb), and the gated switch between the two
(provider/deploy/turn_form.py). `history-format`, its name before 0.2.0,
stays as a hidden alias."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from provider.cli.hubs import hub_connection
from provider.cli.options import PROBLEMS, AsJson, Schema, Url, database_url, fail, print_json, say
from provider.deploy import privileged_session, turn_form


class Form(StrEnum):
    json = "json"
    jsonb = "jsonb"


def downgrade_warning(url: str, schema: str, revision: str) -> str:
    """What a downgrade below 0017 does to a json hub, for its question."""
    if revision != "base" and (not revision.isdigit() or int(revision) >= 17):
        return ""
    with privileged_session.connect(url, autocommit=True, prepare_threshold=None) as conn:
        if turn_form.current_form(conn, schema) != "json":
            return ""
    return (
        " Its fetch goes back from json to jsonb: stop its runtimes first"
        " (they have the result type prepared)."
    )


def register(app: typer.Typer) -> None:
    @app.command("turn-form")
    def turn_form_verb(
        form: Annotated[Form | None, typer.Argument(help="switch to this form")] = None,
        url: Url = None,
        schema: Schema = "public",
        force: Annotated[
            bool, typer.Option(help="switch even while sessions look like runtimes")
        ] = False,
        as_json: AsJson = False,
    ) -> None:
        """Show (without FORM) or switch how fetch_orchestration_item hands over a
        turn: json (hubs created at revision 0017 or later: validated once, never
        rebuilt) or jsonb (hubs that existed before). json also stores the
        history as json, where a hub created before revision 0029 keeps text: a
        fetch then hands it over without a parse (a rewrite of the table under
        its lock). Switch with the runtimes stopped: they have the result type
        prepared. Refused (exit 1) while a session that looks like a runtime is
        connected, unless --force."""
        target = database_url(url)
        # A catalogue read, and a switch behind the privileged fence.
        with hub_connection(target, schema, privileged_ok=True) as conn:
            current = turn_form.current_form(conn, schema)
            stored = turn_form.history_form(conn, schema)
        if form is None:
            if as_json:
                print_json({"schema": schema, "form": current, "history": stored})
            else:
                advice = (
                    " (`turn-form json` stores it as json, with the runtimes stopped)"
                    if stored == "text"
                    else ""
                )
                say(
                    f"schema {schema}: the fetch hands over {current};"
                    f" the history is stored as {stored}{advice}"
                )
            return
        try:
            done = turn_form.switch(target, schema, form.value, force=force)
        except turn_form.SwitchRefused as refused:
            fail(PROBLEMS, f"nothing changed: {refused}")
        if as_json:
            print_json(
                {
                    "schema": schema,
                    "was": done.was,
                    "form": done.now,
                    "history_was": done.history_was,
                    "history": done.history_now,
                }
            )
        else:
            say(done.summary())

    # The name before 0.2.0, for scripts that use it: the same verb, unlisted.
    app.command("history-format", hidden=True)(turn_form_verb)
