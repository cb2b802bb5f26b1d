"""A session that can do more than a hub's owner, and what it may run.

Who is privileged. A hub's objects belong to its owner (the role that
migrated it), who may rewrite any of them at any time, and the owner of the
database may configure every session that connects to it. A session that can
do more than that owner (a superuser, or another login that is a member of
the owner's role, such as the managed service's admin that created it) would
lend those rights to whatever the owner controls and it ran: a function, an
overload or its default, a domain's check, a trigger, a constraint, a view,
a policy, a cast, an operator, a setting. Inspecting those first is not a
boundary (something is always missed), so a privileged session runs none of
them, by construction:

* it sets search_path in the connection's startup parameters, and again in
  its first statement (qualified: a pooler may drop the startup parameter),
  so no name it sends resolves to an object a lesser role created;
* it refuses, in one line, a session whose login acts as another role, and
  a database or role setting that applies to it (the owner of the database
  may have made it);
* it reads the system catalogues, and sends only GRANT and REVOKE and the
  statements of the database's DDL guard, whose text is the package's and
  whose objects live in a schema that the owner does not own
  (provider/deploy/ddl_guard.py);
* it turns off, for its transaction, every event trigger whose function a
  lesser role owns (an event trigger runs as whoever runs DDL, a GRANT too).

Everything else is the owner's, in its own session: the verbs that would run
the hub's code refuse a privileged session in one line (`refuse_privileged`).
The login decides, not the current role: `SET ROLE owner` is no boundary,
since code running after it may `RESET ROLE`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from provider.deploy import session_pinning
from provider.deploy.refusals import MigrationRefused
from provider.deploy.sql_files import read_sql
from provider.standing import PIN_SEARCH_PATH, Standing, refusal, standing_query, unclean

# The path every name resolves on: the catalogue, then nothing a role can add.
PINNED_PATH = "pg_catalog, pg_temp"
STARTUP_OPTION = "-c search_path=pg_catalog,pg_temp"
# The same as a statement of its own (SET LOCAL, in one pooled transaction).
PINNED_SEARCH_PATH = "SET search_path = pg_catalog, pg_temp"
# The first statement: qualified, with literals only, so that it is safe
# whatever path the session started with.
PIN_STATEMENT = PIN_SEARCH_PATH
# What a pooler that does not pass the startup parameter on answers.
_UNSUPPORTED_OPTIONS = "unsupported startup parameter"


class PrivilegedSessionRefused(MigrationRefused):
    """A step a privileged session may not take, or a session configured by
    someone it cannot trust: one line, nothing changed."""


def startup_options(url: str) -> str:
    """The connection's `options` with the pinned search_path added: those of
    the URL, else PGOPTIONS (which libpq reads only when the URL has none)."""
    given = conninfo_to_dict(url).get("options") or os.environ.get("PGOPTIONS") or ""
    return f"{given} {STARTUP_OPTION}".strip()


def connect(url: str, **connect_args: Any) -> psycopg.Connection[Any]:
    """A connection whose search_path is pinned by its startup parameters,
    before any statement runs. A pooler may refuse the parameter (then it is
    left out) or drop it: the caller's first statement is the pooling check
    (provider/deploy/session_pinning.py, qualified), its second `pin`."""
    try:
        return psycopg.connect(url, options=startup_options(url), **connect_args)
    except psycopg.OperationalError as error:
        if _UNSUPPORTED_OPTIONS not in str(error):
            raise
        return psycopg.connect(url, **connect_args)


def one_session(url: str) -> psycopg.Connection[Any]:
    """An autocommit connection for a deploy verb, which runs its transactions
    on one server session: search_path pinned at startup and again, after
    the refusal of a transaction pooler (provider/deploy/session_pinning.py)."""
    conn = connect(url, autocommit=True, prepare_threshold=None)
    try:
        session_pinning.pin(conn, url, {}, "refused: this verb runs on one session; its connection")
        pin(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def pin(conn: psycopg.Connection[Any]) -> None:
    """Pin search_path for the session (a first statement safe on any path)."""
    conn.execute(PIN_STATEMENT)
    if not conn.autocommit:
        conn.commit()


def standing(conn: psycopg.Connection[Any], schema: str) -> Standing:
    """This session next to the hub in `schema` (sql/privileged/standing.sql)."""
    row = conn.execute(standing_query(schema)).fetchone()
    assert row is not None
    return Standing.of_row(schema, row)


def require_clean(found: Standing) -> None:
    """A privileged session runs only if nobody else configured it: it acts as
    the role it logged in as, and no setting a lesser role could have made
    applies to it."""
    refused = unclean(found)
    if refused is not None:
        raise PrivilegedSessionRefused(refused)


def refuse_privileged(found: Standing, what: str, *, hub_required: bool = True) -> None:
    """The one-line refusal of a step that runs the hub's own code (a
    migration, a repair, a runbook verb) in a privileged session, or on a
    schema that is gone when it looks (hub_required: all but a migration,
    which may create the hub)."""
    if not hub_required and not found.hub_exists:
        return
    refused = refusal(found, what)
    if refused is not None:
        raise PrivilegedSessionRefused(refused)


@dataclass(frozen=True)
class EventTrigger:
    name: str
    enabled: str  # O (origin), A (always), R (replica)
    function: str
    function_owner: str

    def enable_statement(self) -> sql.Composed:
        mode = {"A": " ALWAYS", "R": " REPLICA"}.get(self.enabled, "")
        return sql.SQL("ALTER EVENT TRIGGER {} ENABLE" + mode).format(sql.Identifier(self.name))


def untrusted_event_triggers(conn: psycopg.Connection[Any]) -> list[EventTrigger]:
    rows = conn.execute(read_sql("privileged/untrusted_event_triggers.sql")).fetchall()
    return [EventTrigger(str(n), str(e), str(f), str(o)) for n, e, f, o in rows]


@contextmanager
def without_untrusted_event_triggers(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """In the open transaction: every event trigger whose function a lesser
    role owns is off until the block ends, then on again as it was; refused
    in one line where this session may not turn one off."""
    paused = untrusted_event_triggers(conn)
    for trigger in paused:
        try:
            with conn.transaction():
                conn.execute(
                    sql.SQL("ALTER EVENT TRIGGER {} DISABLE").format(sql.Identifier(trigger.name))
                )
        except psycopg.errors.InsufficientPrivilege:
            raise PrivilegedSessionRefused(
                f"refused: event trigger {trigger.name} runs {trigger.function},"
                f" which role {trigger.function_owner} may change, for every DDL statement this"
                " step would send, and this session may not turn it off: run the step as"
                f" {trigger.function_owner}, or as a superuser"
            ) from None
    yield
    for trigger in paused:
        conn.execute(trigger.enable_statement())
