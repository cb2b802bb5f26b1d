"""The form in which fetch_orchestration_item hands over a turn (its history,
messages and KV snapshot): json or jsonb; and the form in which the hub
stores its history: json or text.

json is the text as stored, validated once; jsonb is parsed, built and
printed again on every fetch (36 ms against 26 ms for a 2,000-event, 2 KB
history). The runtime reads either. But a running runtime has the function's
result type prepared, and a changed type fails each of its fetches until it
reconnects ("cached plan must not change result type"). So:

* a hub that a migration run creates is json from the start (the run marks
  the session, `NEW_HUB_SETTING`, before revision 0001; revision 0017 reads
  the mark);
* a hub that existed before the run keeps jsonb, until an operator switches
  it with its runtimes stopped: `taskhub-pg turn-form json --schema S`,
  which refuses while a session that looks like a runtime is connected.

The history: a hub that a migration run creates at revision 0029 or later
stores each event as json, validated once as it is written, and its fetch
hands a history over without a parse (a 2,000-event, 2 KB history: about
what reading its rows costs). A hub that existed before keeps text (a change
of type rewrites the table under its lock) until `turn-form json` stores it
as json too, in the same step, with the runtimes stopped
(sql/turn_form/store_history_as_json.sql).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from provider.citus_placement import CITUS_PRESENT
from provider.deploy import function_history, privileged_session
from provider.deploy.sql_files import TURN_FORMS, render_sql
from provider.deploy.table_locks import call_gate_statement
from provider.deploy.version_table import installed_revision
from provider.schema_name import quote_schema

FUNCTION = "fetch_orchestration_item"
ARGUMENTS = "(bigint, bigint, bigint, bigint)"
# A migration run sets it for its session: on when the schema held no hub
# when the run began, so that no runtime can have the fetch prepared.
NEW_HUB_SETTING = "taskhub.new_hub"

_RESULT_FORM = re.compile(r"\bout_history (jsonb|json)\b")
# The first revision whose functions read and write a history stored either way.
HISTORY_FORMS_FROM = 29
STORE_HISTORY_AS_JSON = "turn_form/store_history_as_json.sql"


def new_hub_mark(schema: str) -> str:
    """The statement a migration run begins with: evaluated where it runs
    (a --sql script too), before revision 0001 creates the tables."""
    quoted = quote_schema(schema).replace("'", "''")
    return (
        f"SELECT pg_catalog.set_config('{NEW_HUB_SETTING}',"
        f" CASE WHEN pg_catalog.to_regclass('{quoted}.instances') IS NULL"
        " THEN 'on' ELSE 'off' END, false)"
    )


def _fetch_exists(schema: str) -> str:
    return f"to_regprocedure('{quote_schema(schema)}.{FUNCTION}{ARGUMENTS}') IS NOT NULL"


def _drop_other_form(schema: str, form: str) -> str:
    """PL/pgSQL that drops a fetch handing over the other form than `form`
    (CREATE OR REPLACE cannot change a result type)."""
    other = "jsonb" if form == "json" else "json"
    return (
        f"IF pg_catalog.pg_get_function_result('{quote_schema(schema)}.{FUNCTION}"
        f"{ARGUMENTS}'::regprocedure) ~ 'out_history {other},' THEN"
        f" DROP FUNCTION {quote_schema(schema)}.{FUNCTION}{ARGUMENTS}; END IF;"
    )


def _create(schema: str, relative_path: str, form: str) -> tuple[str, str]:
    """The file's CREATE FUNCTION in `form`, after dropping a fetch of the other
    form."""
    return _drop_other_form(schema, form), render_sql(relative_path, schema, form)


def chooser(schema: str) -> str:
    """Revision 0017's DO block: it creates the fetch as json when the run
    marked a new hub, else as jsonb: decided where it runs, so a --sql script
    decides too."""
    relative_path = first_form_aware().path
    parts = []
    for form in ("json", "jsonb"):
        drop, create = _create(schema, relative_path, form)
        parts.append(
            f"IF {_fetch_exists(schema)} THEN {drop} END IF;\n"
            f"        EXECUTE $create_{form}$\n{create}\n$create_{form}$;"
        )
    return f"""DO $turn_form$
BEGIN
    IF coalesce(current_setting('{NEW_HUB_SETTING}', true), 'off') = 'on' THEN
        {parts[0]}
    ELSE
        {parts[1]}
    END IF;
END
$turn_form$"""


def first_form_aware() -> function_history.Version:
    """The first fetch that took __TURN_FORM__ (json or jsonb) and made json
    the head form (0017's), from the fetch's history."""
    return next(v for v in function_history.versions(FUNCTION) if v.takes_turn_form())


def fetch_file(revision: int) -> str:
    """The fetch a hub at `revision` (17 or later) runs, from the function's
    history (provider/deploy/function_history.py)."""
    number = f"{revision:04d}"
    version = function_history.version_at(FUNCTION, number)
    if version is None or not version.takes_turn_form():
        raise ValueError(f"revision {number} runs no fetch that takes a turn form")
    return version.path


def keeping_its_form(schema: str, relative_path: str) -> str:
    """A DO block that replaces the fetch with the file's, in the form the hub's
    fetch hands over now: a runtime keeps the result type it has prepared."""
    creates = {form: render_sql(relative_path, schema, form) for form in TURN_FORMS}
    fetch = f"'{quote_schema(schema)}.{FUNCTION}{ARGUMENTS}'::regprocedure"
    return f"""DO $turn_form$
BEGIN
    IF pg_catalog.pg_get_function_result({fetch}) ~ 'out_history json,' THEN
        EXECUTE $create_json$
{creates["json"]}
$create_json$;
    ELSE
        EXECUTE $create_jsonb$
{creates["jsonb"]}
$create_jsonb$;
    END IF;
END
$turn_form$"""


def back_to(schema: str, form: str) -> str:
    """A downgrade's first step: drop a fetch of the other form, so that the
    released one (jsonb) can be put back in place."""
    drop = _drop_other_form(schema, form)
    return f"DO $turn_form$ BEGIN IF {_fetch_exists(schema)} THEN {drop} END IF; END $turn_form$"


def current_form(conn: psycopg.Connection[Any], schema: str) -> str | None:
    """json or jsonb: what the hub's fetch hands over (None: no fetch)."""
    row = conn.execute(
        "SELECT pg_get_function_result(to_regprocedure(%s))",
        [f"{quote_schema(schema)}.{FUNCTION}{ARGUMENTS}"],
    ).fetchone()
    found = _RESULT_FORM.search(str(row[0])) if row and row[0] else None
    return found.group(1) if found else None


def distributed(conn: psycopg.Connection[Any], schema: str) -> bool:
    """Whether Citus distributes the hub's tables: there the history keeps its
    form (the conversion's function lives in the session's pg_temp, which
    Citus cannot send to its workers)."""
    row = conn.execute(CITUS_PRESENT).fetchone()
    if not (row and row[0]):
        return False
    found = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition"
        "                WHERE logicalrelid = pg_catalog.to_regclass(%s))",
        [f"{quote_schema(schema)}.history"],
    ).fetchone()
    return bool(found and found[0])


def history_form(conn: psycopg.Connection[Any], schema: str) -> str | None:
    """json or text: how the hub stores its history (None: no history table)."""
    row = conn.execute(
        "SELECT pg_catalog.format_type(a.atttypid, NULL) FROM pg_catalog.pg_attribute AS a"
        " WHERE a.attrelid = pg_catalog.to_regclass(%s) AND a.attname = 'event_data'"
        " AND NOT a.attisdropped",
        [f"{quote_schema(schema)}.history"],
    ).fetchone()
    return str(row[0]) if row else None


@dataclass(frozen=True)
class Caller:
    """A session that may have the fetch prepared: a runtime."""

    pid: int
    user: str
    application: str
    query: str

    def describe(self) -> str:
        return f"pid {self.pid} {self.application or '?'} ({self.user}): {self.query[:80]}"


def likely_runtimes(conn: psycopg.Connection[Any], schema: str) -> list[Caller]:
    """Other sessions logged in as a runtime role of the hub, or whose last
    statement named its schema: what a runtime looks like from here."""
    rows = conn.execute(
        sql.SQL(
            "SELECT a.pid, a.usename, a.application_name, a.query"
            "  FROM pg_stat_activity AS a"
            " WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()"
            "   AND a.backend_type = 'client backend'"
            "   AND (a.usename IN (SELECT role_name FROM {}.taskhub_runtime_roles)"
            "        OR strpos(a.query, %s) > 0 OR strpos(a.query, %s) > 0)"
            " ORDER BY a.pid"
        ).format(sql.Identifier(schema)),
        [f"{schema}.", f"{quote_schema(schema)}."],
    ).fetchall()
    return [
        Caller(int(pid), str(user), str(app or ""), str(query or ""))
        for pid, user, app, query in rows
    ]


class SwitchRefused(Exception):
    """A switch that could wedge a running runtime, or that cannot be made."""


@dataclass(frozen=True)
class Switched:
    schema: str
    was: str
    now: str
    history_was: str | None = None
    history_now: str | None = None

    def summary(self) -> str:
        if self.was == self.now:
            said = f"schema {self.schema}: the fetch hands over {self.now} already"
        else:
            said = f"schema {self.schema}: the fetch hands over {self.now} (was {self.was})"
        if self.history_now is None:
            return said
        if self.history_was != self.history_now:
            return f"{said}; the history is stored as {self.history_now} (was {self.history_was})"
        if self.now == "json" and self.history_now == "text":
            return (
                f"{said}; the history stays text (at revision {HISTORY_FORMS_FROM:04d} or"
                " later, and not distributed by Citus, this step stores it as json)"
            )
        return f"{said}; the history is stored as {self.history_now}"


def switch(url: str, schema: str, form: str, *, force: bool = False) -> Switched:
    """Make the hub's fetch hand over `form`, in one transaction behind the
    call gate; refused while a runtime seems connected, unless `force`."""
    if form not in TURN_FORMS:
        raise SwitchRefused(f"the form must be one of {', '.join(TURN_FORMS)}, not {form}")
    with privileged_session.one_session(url) as conn:
        # The switch runs the hub's own functions: its owner's step.
        found = privileged_session.standing(conn, schema)
        privileged_session.require_clean(found)
        privileged_session.refuse_privileged(found, "turn-form")
        with conn.transaction():
            was = current_form(conn, schema)
            if was is None:
                raise SwitchRefused(f"schema {schema} has no fetch_orchestration_item to switch")
            stored = history_form(conn, schema)
            revision = int(installed_revision(conn, schema) or 0)
            # json throughout: the history is stored as json too, once the
            # hub's functions read and write either form.
            store_as_json = (
                form == "json"
                and stored == "text"
                and revision >= HISTORY_FORMS_FROM
                and not distributed(conn, schema)
            )
            if was == form and not store_as_json:
                return Switched(schema, was, form, stored, stored)
            if revision < 17:
                raise SwitchRefused(f"schema {schema} is below revision 0017: run upgrade first")
            runtimes = likely_runtimes(conn, schema)
            if runtimes and not force:
                raise SwitchRefused(
                    f"{len(runtimes)} session(s) look like runtimes of schema {schema}"
                    f" ({'; '.join(c.describe() for c in runtimes[:3])}): a runtime has the"
                    " fetch's result type prepared and would fail every fetch until it"
                    " reconnects. Stop the runtimes, switch, start them again (or --force)."
                )
            conn.execute("SET LOCAL lock_timeout = '5s'")
            # The call gate: no call is half-way through the fetch we replace.
            conn.execute(call_gate_statement(schema))
            if was != form:
                drop, create = _create(schema, fetch_file(revision), form)
                conn.execute(f"DO $turn_form$ BEGIN {drop} END $turn_form$")
                conn.execute(create)
            if store_as_json:
                conn.execute(render_sql(STORE_HISTORY_AS_JSON, schema))
            q = sql.Identifier(schema)
            conn.execute(sql.SQL("SELECT {}.taskhub_refresh_runtime_roles()").format(q))
            conn.execute(sql.SQL("SELECT {}.taskhub_record_definitions()").format(q))
    return Switched(schema, was, form, stored, "json" if store_as_json else stored)
