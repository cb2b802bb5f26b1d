"""Is there a hub in --schema? Each verb that reads or changes one asks first
(one catalogue query), so a forgotten --schema (public by default) is exit 3
and one line naming the hubs the database does hold."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from provider.cli.options import NOT_FOUND, PROBLEMS, Failure
from provider.cli.urls import InvalidUrl, libpq_url
from provider.client.on_connection import OnConnection
from provider.deploy import privileged_session
from provider.deploy.privileged_session import PINNED_SEARCH_PATH
from provider.deploy.session_pinning import one_transaction_behind_a_pooler
from provider.errors import TaskHubError
from provider.operations.hub_status import HubSchema, hub_schemas, schema_exists
from provider.standing import untrusted

LISTED = 10  # a database of many hubs: name the first few


def _names(hubs: list[HubSchema]) -> str:
    names = [hub.name for hub in hubs[:LISTED]]
    more = f" and {len(hubs) - LISTED} more" if len(hubs) > LISTED else ""
    return ", ".join(names) + more


def hubs_hint(hubs: list[HubSchema]) -> str:
    """Where the hubs are: what to pass as --schema instead."""
    adopted = [hub for hub in hubs if hub.adopted]
    duroxide = [hub for hub in hubs if not hub.adopted]
    parts = []
    if adopted:
        parts.append(f"hubs on this server's database: {_names(adopted)} (pass --schema)")
    if duroxide:
        parts.append(
            f"duroxide 0.2.2 schemas not adopted yet: {_names(duroxide)}"
            " (adopt one with taskhub-pg upgrade --schema NAME)"
        )
    return "; ".join(parts) or "this database holds no task hub (taskhub-pg upgrade makes one)"


def no_hub(conn: psycopg.Connection[Any], schema: str, code: int = NOT_FOUND) -> Failure | None:
    """What is wrong with --schema as a hub, or None when it holds one."""
    hubs = hub_schemas(conn)
    here = next((hub for hub in hubs if hub.name == schema), None)
    if here is not None and here.adopted:
        return None
    others = [hub for hub in hubs if hub.name != schema]
    if here is not None:
        return Failure(
            code,
            f"schema {schema} holds a duroxide 0.2.2 task hub taskhub-pg has not adopted",
            f"adopt it with taskhub-pg upgrade --schema {schema}",
        )
    if not schema_exists(conn, schema):
        return Failure(code, f"schema {schema} does not exist", hubs_hint(others))
    return Failure(code, f"schema {schema} holds no task hub", hubs_hint(others))


def explain_missing(url: str | None, schema: str | None, error: Exception) -> Failure | None:
    """An undefined table or function a verb met: no hub in --schema (named
    as no_hub names it), or a hub that lacks that part. None: cannot tell."""
    if not url or not schema:
        return None
    diag = getattr(error, "diag", None)
    what = getattr(diag, "message_primary", None) or getattr(error, "message", None) or str(error)
    try:
        with privileged_session.connect(
            libpq_url(url), autocommit=True, prepare_threshold=None, connect_timeout=5
        ) as conn:
            failure = no_hub(conn, schema)
    except (psycopg.Error, InvalidUrl):
        return None
    return failure or Failure(
        NOT_FOUND,
        f"schema {schema} lacks part of its hub: {what}",
        "taskhub-pg check names what drifted; taskhub-pg upgrade applies pending revisions",
    )


def too_privileged(conn: psycopg.Connection[Any], schema: str) -> Failure | None:
    """The refusal of a verb that runs the hub's code (its functions and views:
    the runbook, a migration) in a session that can do more than the hub's
    owner, a superuser's say: that code is the owner's, and would run with
    this session's rights (provider/deploy/privileged_session.py). None: the
    session may."""
    found = privileged_session.standing(conn, schema)
    if not found.hub_exists:
        # Nothing to run: the verb's own "no hub" answer, never a look that
        # a schema renamed back after it could make "not privileged".
        return no_hub(conn, schema) or Failure(NOT_FOUND, f"schema {schema} does not exist")
    if not untrusted(found):
        return None
    owner = found.owner or "its owner"
    return Failure(
        PROBLEMS,
        f"this session ({found.login}) can do more than {owner}, the owner of the hub in"
        f" schema {schema}: this verb would run code {owner} can change, with its rights",
        f"connect as {owner}, or as an operator role for the runbook"
        " (taskhub-pg grant-operator-role)",
    )


@contextmanager
def hub_connection(
    url: str, schema: str, *, privileged_ok: bool = False
) -> Iterator[psycopg.Connection[Any]]:
    """An autocommit connection, once --schema is known to hold a hub and,
    unless the verb runs behind the privileged fence (privileged_ok), the
    session is known to gain nothing by running the hub's code."""
    with (
        privileged_session.connect(url, autocommit=True, prepare_threshold=None) as conn,
        one_transaction_behind_a_pooler(conn, [PINNED_SEARCH_PATH]),
    ):
        failure = no_hub(conn, schema) or (None if privileged_ok else too_privileged(conn, schema))
        if failure is not None:
            raise failure
        yield conn


@contextmanager
def hub_session(url: str, schema: str) -> Iterator[OnConnection]:
    """The runbook's plans (provider/client/operator_plans.py), run on
    hub_connection's session once it has made its checks. A verb ends on
    their refusals itself (failures.end_on_refusal); any other error the
    server raised leaves as the server's own, which failures.failure_of
    words with its hint, as these verbs always have."""
    with hub_connection(url, schema) as conn, the_servers_own_errors():
        yield OnConnection(conn, schema)


@contextmanager
def the_servers_own_errors() -> Iterator[None]:
    """A plan's TaskHubError that the server raised, as the server's own
    error: failures.failure_of words it with its SQLSTATE's hint."""
    try:
        yield
    except TaskHubError as error:
        if isinstance(error.__cause__, psycopg.Error):
            raise error.__cause__ from None
        raise


def require_hub(url: str, schema: str, *, privileged_ok: bool = False) -> None:
    """Exit 3 unless --schema holds a hub (a verb that connects otherwise);
    exit 1 for a privileged session unless the verb is fenced (privileged_ok)."""
    with hub_connection(url, schema, privileged_ok=privileged_ok):
        pass


def is_connection_failure(error: psycopg.OperationalError) -> bool:
    """No session at all (libpq's own failure, no SQLSTATE), or one the server
    refused at its start (class 08, 57P03: starting up): the database did
    not answer a question. Anything else it answered."""
    state = error.sqlstate
    return state is None or state.startswith("08") or state == "57P03"


def refuse_a_privileged_session(url: str, schema: str, connect_timeout_s: float) -> None:
    """For a server that must start whether the database answers or not (the
    metrics): exit 1 if it answers and the session would be privileged."""
    try:
        with (
            privileged_session.connect(
                url,
                autocommit=True,
                prepare_threshold=None,
                connect_timeout=max(1, round(connect_timeout_s)),
            ) as conn,
            one_transaction_behind_a_pooler(conn, [PINNED_SEARCH_PATH]),
        ):
            # A hub not there yet: each read looks again (metrics/collector.py).
            exists = privileged_session.standing(conn, schema).hub_exists
            refused = too_privileged(conn, schema) if exists else None
    except psycopg.OperationalError as error:
        if not is_connection_failure(error):
            raise  # it answered, and refused the look (a timeout, say): fail closed
        return  # /healthz says it is down; each read checks again (metrics/collector.py)
    if refused is not None:
        raise refused
