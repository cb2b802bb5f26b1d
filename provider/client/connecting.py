"""Opening a hub fails fast and precisely: the URL is parsed before anything
else, and the first connection is made at once, bounded by
`TaskHubConfig.connect_timeout_s`. A hub that cannot be opened as configured
(a bad URL, an unknown host, nobody listening, refused credentials, a missing
database, no answer within the bound) raises a ConfigurationError naming the
call, with any password masked: retrying the same settings cannot succeed.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

import psycopg
from psycopg.conninfo import conninfo_to_dict

from provider.citus_placement import CITUS_PRESENT, PLACEMENT_QUERY, Node, node_url
from provider.config import TaskHubConfig
from provider.errors import ConfigurationError

MASK = "***"
_MIN_BARE_MASK = 4
# postgresql://user:password@host/... (to the last @ before the path: a
# password may hold an unescaped @) and password=... (quoted or not).
_URL_PASSWORD = re.compile(r"(://[^/@:]*:)(?P<password>[^/]*)(@)")
_KEYWORD_PASSWORD = re.compile(
    r"(password\s*=\s*)(?P<password>'(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE
)


def masked(text: str, passwords: tuple[str, ...] = ()) -> str:
    """`text` with the password of a URL or keyword string in it replaced,
    and every other occurrence of `passwords` too."""
    text = _URL_PASSWORD.sub(rf"\g<1>{MASK}\g<3>", text)
    text = _KEYWORD_PASSWORD.sub(rf"\g<1>{MASK}", text)
    for password in sorted(passwords, key=len, reverse=True):
        # libpq quotes the values it complains of; a short password is masked
        # only there, lest every "p" of a message become ***.
        text = text.replace(f'"{password}"', f'"{MASK}"')
        if len(password) >= _MIN_BARE_MASK:
            text = text.replace(password, MASK)
    return text


def passwords_of(url: str) -> tuple[str, ...]:
    """Every form of the URL's password a message may quote: as written (even
    in a URL libpq cannot parse, whose error may quote it) and as parsed."""
    written = [m["password"] for m in _URL_PASSWORD.finditer(url)]
    written += [m["password"].strip("'") for m in _KEYWORD_PASSWORD.finditer(url)]
    found = {*written, *map(unquote, written)}
    try:
        parsed = conninfo_to_dict(url).get("password")
    except psycopg.Error:
        parsed = None
    if parsed is not None:
        found.add(str(parsed))
    return tuple(password for password in found if password)


def _refused(operation: str, url: str, problem: str, error: psycopg.Error) -> ConfigurationError:
    """The error for `url`: `problem` says what is wrong, `error` is libpq's word."""
    # libpq messages run over several lines (a hint on the next, tab-indented).
    detail = " ".join(str(error).split())
    return ConfigurationError(operation, masked(f"{problem} {url!r}: {detail}", passwords_of(url)))


def check_url(operation: str, url: str) -> None:
    """Refuse a URL libpq cannot parse, without connecting."""
    if not isinstance(url, str) or not url.strip():
        raise ConfigurationError(operation, f"the database URL must be a non-empty text: {url!r}")
    try:
        conninfo_to_dict(url)
    except psycopg.Error as error:
        problem = "not a libpq URL or connection string:"
        raise _refused(operation, url, problem, error) from None


def _connect_timeout(config: TaskHubConfig) -> int:
    """connect_timeout_s as libpq counts it: whole seconds, at least 2."""
    return max(2, math.ceil(config.connect_timeout_s))


def _connect_problem(config: TaskHubConfig, error: psycopg.Error) -> str:
    if isinstance(error, psycopg.errors.ConnectionTimeout):
        return f"no answer within {_connect_timeout(config)} s from"
    return "cannot connect to"


def probe(operation: str, config: TaskHubConfig, settings: dict[str, Any]) -> None:
    """Make one connection as the pool will, at once: a hub that cannot
    connect raises here, not on its first call 10 s later as a RetryableError
    a worker would retry forever."""
    try:
        timeout = _connect_timeout(config)
        psycopg.Connection.connect(config.url, **settings, connect_timeout=timeout).close()
    except psycopg.Error as error:
        raise _refused(operation, config.url, _connect_problem(config, error), error) from None


async def probe_async(operation: str, config: TaskHubConfig, settings: dict[str, Any]) -> None:
    """As `probe`, on the running event loop."""
    try:
        timeout = _connect_timeout(config)
        conn = await psycopg.AsyncConnection.connect(
            config.url, **settings, connect_timeout=timeout
        )
        await conn.close()
    except psycopg.Error as error:
        raise _refused(operation, config.url, _connect_problem(config, error), error) from None


def _node_of(rows: list[Any], config: TaskHubConfig) -> str:
    """The node's URL when the hub is on exactly one node, else the URL as given."""
    if len(rows) != 1:
        return config.url
    return node_url(config.url, Node(str(rows[0][0]), int(rows[0][1])))


def direct_url(operation: str, config: TaskHubConfig, settings: dict[str, Any]) -> str:
    """With citus_direct: the URL of the Citus node that holds the hub, found
    on config.url (the coordinator; connecting to it is the probe), and the
    node probed in turn; config.url itself for a hub not distributed."""
    try:
        timeout = _connect_timeout(config)
        with psycopg.Connection.connect(config.url, **settings, connect_timeout=timeout) as conn:
            present = conn.execute(CITUS_PRESENT).fetchone()
            rows = []
            if present and present[0]:
                rows = conn.execute(PLACEMENT_QUERY, {"schema": config.schema}).fetchall()
    except psycopg.Error as error:
        raise _refused(operation, config.url, _connect_problem(config, error), error) from None
    url = _node_of(rows, config)
    if url != config.url:
        probe(operation, replace(config, url=url), settings)
    return url


async def direct_url_async(operation: str, config: TaskHubConfig, settings: dict[str, Any]) -> str:
    """As `direct_url`, on the running event loop."""
    try:
        timeout = _connect_timeout(config)
        conn = await psycopg.AsyncConnection.connect(
            config.url, **settings, connect_timeout=timeout
        )
        async with conn:
            present = await (await conn.execute(CITUS_PRESENT)).fetchone()
            rows = []
            if present and present[0]:
                cursor = await conn.execute(PLACEMENT_QUERY, {"schema": config.schema})
                rows = await cursor.fetchall()
    except psycopg.Error as error:
        raise _refused(operation, config.url, _connect_problem(config, error), error) from None
    url = _node_of(rows, config)
    if url != config.url:
        await probe_async(operation, replace(config, url=url), settings)
    return url
