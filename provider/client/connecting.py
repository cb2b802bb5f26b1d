"""Opening a hub fails fast and precisely: the URL is parsed before anything
else, and the first connection is made at once, bounded by
`TaskHubConfig.connect_timeout_s`. A hub that cannot be opened as configured
(a bad URL, an unknown host, nobody listening, refused credentials, a missing
database, no answer within the bound) raises a ConfigurationError naming the
call, with any password masked: retrying the same settings cannot succeed.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, NamedTuple

import psycopg

from provider.citus_placement import CITUS_PRESENT, PLACEMENT_QUERY, Node, node_url
from provider.client.pooling import refused_startup_option
from provider.client.session_standing import (
    refuse_a_privileged_session,
    refuse_a_privileged_session_async,
)
from provider.config import TaskHubConfig
from provider.errors import ConfigurationError
from provider.masking import mask_url, masked, passwords_of, url_problem
from provider.schema_name import quote_schema


class Look(NamedTuple):
    """What the hub found when it opened."""

    pooled: bool  # a pooler sits between (provider/client/pooling.py)
    # The schema starts orchestrations once (taskhub_start_orchestration,
    # revision 0025); a hub opened on an older revision, as during a deploy
    # from one, starts them as the duroxide client does.
    start_once: bool


# One statement: the server's pid (a pooler announces another) and whether the
# schema has the start that runs once.
# Qualified: a session's first statement runs on whatever search_path the
# database's settings gave it.
LOOK = "SELECT pg_catalog.pg_backend_pid(), pg_catalog.to_regprocedure(%s) IS NOT NULL"
START_ONCE = "taskhub_start_orchestration(text, text, timestamp with time zone, text, text)"


def _look_arguments(config: TaskHubConfig) -> list[str]:
    return [f"{quote_schema(config.schema)}.{START_ONCE}"]


def _look(opened: Opened, config: TaskHubConfig, operation: str) -> Look:
    refuse_a_privileged_session(opened.conn, config.schema, operation)
    row = opened.conn.execute(LOOK, _look_arguments(config)).fetchone()
    assert row is not None
    pooled = opened.refused_option or row[0] != opened.conn.info.backend_pid
    return Look(pooled, bool(row[1]))


async def _look_async(opened: AsyncOpened, config: TaskHubConfig, operation: str) -> Look:
    await refuse_a_privileged_session_async(opened.conn, config.schema, operation)
    cursor = await opened.conn.execute(LOOK, _look_arguments(config))
    row = await cursor.fetchone()
    assert row is not None
    pooled = opened.refused_option or row[0] != opened.conn.info.backend_pid
    return Look(pooled, bool(row[1]))


class Opened(NamedTuple):
    conn: psycopg.Connection[Any]
    refused_option: bool  # a pooler refused the startup option


class AsyncOpened(NamedTuple):
    conn: psycopg.AsyncConnection[Any]
    refused_option: bool


def _refused(operation: str, url: str, problem: str, error: psycopg.Error) -> ConfigurationError:
    """The error for `url`: `problem` says what is wrong, `error` is libpq's word."""
    # libpq messages run over several lines (a hint on the next, tab-indented).
    detail = masked(" ".join(str(error).split()), passwords_of(url))
    return ConfigurationError(operation, f"{problem} {mask_url(url)!r}: {detail}")


def check_url(operation: str, url: str) -> None:
    """Refuse, without connecting, a URL libpq cannot parse or would misread
    (a raw '@', '/' or space in its password), shown with no user or password."""
    if not isinstance(url, str) or not url.strip():
        shown = repr(url) if isinstance(url, str) else f"a {type(url).__name__}"
        raise ConfigurationError(operation, f"the database URL must be a non-empty text: {shown}")
    problem = url_problem(url)
    if problem is not None:
        raise ConfigurationError(operation, f"the database URL {mask_url(url)!r}: {problem}")


def _connect_timeout(config: TaskHubConfig) -> int:
    """connect_timeout_s as libpq counts it: whole seconds, at least 2."""
    return max(2, math.ceil(config.connect_timeout_s))


def _connect_problem(config: TaskHubConfig, error: psycopg.Error) -> str:
    if isinstance(error, psycopg.errors.ConnectionTimeout):
        return f"no answer within {_connect_timeout(config)} s from"
    return "cannot connect to"


def _refusal_hint(config: TaskHubConfig, error: psycopg.Error) -> str:
    if refused_startup_option(error):
        return (
            "cannot connect (a connection pooler refuses the statement timeout's startup "
            f"option: pooler={config.pooler!r}; set pooler='transaction' or 'session') to"
        )
    return _connect_problem(config, error)


def _without_startup_option(settings: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in settings.items() if name != "options"}


def _first_connection(config: TaskHubConfig, url: str, settings: dict[str, Any]) -> Opened:
    """A connection as the pool will make it, and whether a pooler answered:
    with pooler='auto', one that refuses the startup option is a pooler, and
    the connection is made again without it."""
    timeout = _connect_timeout(config)
    try:
        return Opened(psycopg.Connection.connect(url, **settings, connect_timeout=timeout), False)
    except psycopg.Error as error:
        if not (config.pooler == "auto" and refused_startup_option(error)):
            raise
    bare = _without_startup_option(settings)
    return Opened(psycopg.Connection.connect(url, **bare, connect_timeout=timeout), True)


async def _first_connection_async(
    config: TaskHubConfig, url: str, settings: dict[str, Any]
) -> AsyncOpened:
    """As `_first_connection`, on the running event loop."""
    timeout = _connect_timeout(config)
    try:
        conn = await psycopg.AsyncConnection.connect(url, **settings, connect_timeout=timeout)
        return AsyncOpened(conn, False)
    except psycopg.Error as error:
        if not (config.pooler == "auto" and refused_startup_option(error)):
            raise
    bare = _without_startup_option(settings)
    conn = await psycopg.AsyncConnection.connect(url, **bare, connect_timeout=timeout)
    return AsyncOpened(conn, True)


def probe(operation: str, config: TaskHubConfig, settings: dict[str, Any]) -> Look:
    """Make one connection as the pool will, at once: a hub that cannot
    connect raises here, not on its first call 10 s later as a RetryableError
    a worker would retry forever. What it found there."""
    try:
        opened = _first_connection(config, config.url, settings)
        with opened.conn:
            return _look(opened, config, operation)
    except psycopg.Error as error:
        raise _refused(operation, config.url, _refusal_hint(config, error), error) from None


async def probe_async(operation: str, config: TaskHubConfig, settings: dict[str, Any]) -> Look:
    """As `probe`, on the running event loop."""
    try:
        opened = await _first_connection_async(config, config.url, settings)
        async with opened.conn:
            return await _look_async(opened, config, operation)
    except psycopg.Error as error:
        raise _refused(operation, config.url, _refusal_hint(config, error), error) from None


def _node_of(rows: list[Any], config: TaskHubConfig) -> str:
    """The node's URL when the hub is on exactly one node, else the URL as given."""
    if len(rows) != 1:
        return config.url
    return node_url(config.url, Node(str(rows[0][0]), int(rows[0][1])))


def direct_url(operation: str, config: TaskHubConfig, settings: dict[str, Any]) -> tuple[str, Look]:
    """With citus_direct: the URL of the Citus node that holds the hub, found
    on config.url (the coordinator; connecting to it is the probe), and the
    node probed in turn; config.url itself for a hub not distributed. With it,
    what the probe found."""
    try:
        opened = _first_connection(config, config.url, settings)
        with opened.conn as conn:
            look = _look(opened, config, operation)
            present = conn.execute(CITUS_PRESENT).fetchone()
            rows = []
            if present and present[0]:
                rows = conn.execute(PLACEMENT_QUERY, {"schema": config.schema}).fetchall()
    except psycopg.Error as error:
        raise _refused(operation, config.url, _refusal_hint(config, error), error) from None
    url = _node_of(rows, config)
    if url != config.url:
        look = probe(operation, replace(config, url=url), settings)
    return url, look


async def direct_url_async(
    operation: str, config: TaskHubConfig, settings: dict[str, Any]
) -> tuple[str, Look]:
    """As `direct_url`, on the running event loop."""
    try:
        opened = await _first_connection_async(config, config.url, settings)
        async with opened.conn as conn:
            look = await _look_async(opened, config, operation)
            present = await (await conn.execute(CITUS_PRESENT)).fetchone()
            rows = []
            if present and present[0]:
                cursor = await conn.execute(PLACEMENT_QUERY, {"schema": config.schema})
                rows = await cursor.fetchall()
    except psycopg.Error as error:
        raise _refused(operation, config.url, _refusal_hint(config, error), error) from None
    url = _node_of(rows, config)
    if url != config.url:
        look = await probe_async(operation, replace(config, url=url), settings)
    return url, look
