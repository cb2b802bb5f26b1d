"""What sits between the provider and the server, and how each connection is
set up for it (docs/poolers-and-failover.md).

    direct        the server itself: statements prepared after psycopg's
                  5 runs, the statement timeout sent as a startup option.
    session       a pooler that pins a server connection to each client
                  (PgBouncer pool_mode=session): as direct, but no startup
                  option (poolers refuse them); the timeout is SET on
                  each new connection.
    transaction   a pooler that hands out a server connection per
                  transaction (PgBouncer pool_mode=transaction, RDS Proxy,
                  Supavisor's transaction port): no session state survives
                  a call, so nothing is prepared, the timeout is SET LOCAL
                  inside each call's transaction (one round trip, pipelined)
                  and push wakeups need a `listen_url` that pins a session.

`TaskHubConfig.pooler` names the mode, or "auto" (the default): the hub
looks when it opens. A server whose pid differs from the one the connection
announced is behind a pooler, which could be in transaction mode: the hub
takes the transaction mode's settings, which are safe in both, and says so
once. A pooler that refuses the startup option tells the same.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from provider import standing
from provider.config import TaskHubConfig
from provider.logs import fields

log = logging.getLogger(__name__)

Mode = Literal["direct", "session", "transaction"]

# The setting of a verb's or a page's few calls (taskhub-pg, the dashboard):
# safe whatever sits in between, with nothing to look for or to advise; they
# prepare nothing worth keeping and listen to nothing.
ONE_SHOT_POOLER: Literal["transaction"] = "transaction"

# Every name a session resolves: the catalogue, then nothing a role can add.
# The hub's statements qualify every name of the hub's, and its functions pin
# their own path; this keeps a setting of the database's owner from placing
# anything before the catalogue (a startup option where nothing sits in
# between, a SET on each session a pooler pins; each statement is qualified
# for a pooler that hands out transactions).
PINNED_PATH_OPTION = "-c search_path=pg_catalog,pg_temp"
PIN_SEARCH_PATH = standing.PIN_SEARCH_PATH

# psycopg's own default: a query is prepared on the server after 5 runs.
PSYCOPG_PREPARE_THRESHOLD = 5

# What a pooler answers a startup parameter it does not pass on (PgBouncer,
# Supavisor and RDS Proxy word it alike).
REFUSED_STARTUP_PARAMETER = "unsupported startup parameter"


@dataclass(frozen=True)
class Pooling:
    """The hub's connections, set up for `mode`."""

    mode: Mode
    # Seen on the server when the hub opened, not named in the configuration.
    detected: bool = False

    @classmethod
    def configured(cls, config: TaskHubConfig) -> Pooling:
        """The mode the configuration names; "auto" starts as direct until
        the hub looks (`detect`)."""
        return cls("direct" if config.pooler == "auto" else config.pooler)

    def prepare_threshold(self, config: TaskHubConfig) -> int | None:
        if config.prepare_threshold != "auto":
            return config.prepare_threshold
        return None if self.mode == "transaction" else PSYCOPG_PREPARE_THRESHOLD

    def connection_settings(self, config: TaskHubConfig) -> dict[str, Any]:
        """Every pooled connection: autocommit, named; bounded per statement
        by a startup option only when nothing sits between."""
        settings: dict[str, Any] = {
            "autocommit": True,
            "application_name": config.application_name,
            "prepare_threshold": self.prepare_threshold(config),
        }
        if self.mode == "direct":
            # The URL's own options kept (the keyword would replace them).
            options = [url_options(config.url), PINNED_PATH_OPTION]
            if config.statement_timeout_ms is not None:
                options.append(f"-c statement_timeout={config.statement_timeout_ms}")
            settings["options"] = " ".join(o for o in options if o)
        return settings

    def session_timeout_ms(self, config: TaskHubConfig) -> int | None:
        """The timeout SET once on each new connection (session mode)."""
        return config.statement_timeout_ms if self.mode == "session" else None

    def per_call_timeout_ms(self, config: TaskHubConfig) -> int | None:
        """The timeout SET LOCAL inside each call's transaction (transaction mode)."""
        return config.statement_timeout_ms if self.mode == "transaction" else None

    def set_up(self, conn: psycopg.Connection[Any], config: TaskHubConfig) -> None:
        """The pool's step for each new connection (session mode: the pinned
        search_path and the timeout, which no startup option carried)."""
        if self.mode == "session":
            conn.execute(PIN_SEARCH_PATH)
        timeout_ms = self.session_timeout_ms(config)
        if timeout_ms is not None:
            conn.execute(set_timeout(timeout_ms, local=False))

    async def set_up_async(self, conn: psycopg.AsyncConnection[Any], config: TaskHubConfig) -> None:
        """As `set_up`, for the asyncio pool."""
        if self.mode == "session":
            await conn.execute(PIN_SEARCH_PATH)
        timeout_ms = self.session_timeout_ms(config)
        if timeout_ms is not None:
            await conn.execute(set_timeout(timeout_ms, local=False))

    def listen_url(self, config: TaskHubConfig) -> str | None:
        """Where push wakeups LISTEN: `listen_url` when given; else the hub's
        URL unless a transaction pooler is in between (no LISTEN survives it)."""
        if config.listen_url is not None:
            return config.listen_url
        return None if self.mode == "transaction" else config.url


def url_options(url: str) -> str:
    """The `options` a URL gives libpq, else PGOPTIONS (read only without)."""
    return str(conninfo_to_dict(url).get("options") or os.environ.get("PGOPTIONS") or "")


def set_timeout(timeout_ms: int, *, local: bool) -> sql.Composed:
    """SET [LOCAL] statement_timeout = <ms>."""
    return sql.SQL("SET {} statement_timeout = {}").format(
        sql.SQL("LOCAL" if local else "SESSION"), sql.Literal(timeout_ms)
    )


def behind_a_pooler(conn: psycopg.Connection[Any]) -> bool:
    """Whether the server's pid differs from the one the connection announced
    (poolers announce their own): a pooler is in between."""
    row = conn.execute("SELECT pg_catalog.pg_backend_pid()").fetchone()
    return row is not None and row[0] != conn.info.backend_pid


@contextmanager
def bounded_transaction(conn: psycopg.Connection[Any], timeout_ms: int) -> Iterator[None]:
    """A transaction whose statements each get `timeout_ms` and the pinned
    search_path (SET LOCAL: nothing stays on a pooled session), for reads
    that cannot carry a startup option."""
    with conn.transaction():
        conn.execute("SET LOCAL search_path = pg_catalog, pg_temp")
        conn.execute(set_timeout(timeout_ms, local=True))
        yield


def refused_startup_option(error: psycopg.Error) -> bool:
    return REFUSED_STARTUP_PARAMETER in str(error)


def after_looking(config: TaskHubConfig, pooled: bool) -> Pooling:
    """The mode once the hub has looked at the server: "auto" behind a pooler
    takes the transaction mode's settings (safe in either mode) and says so."""
    configured = Pooling.configured(config)
    if not pooled:
        return configured
    if config.pooler == "auto":
        log.warning(
            "schema %s: a connection pooler sits between the provider and the server; "
            "taking the settings of transaction pooling (no prepared statements, the "
            "statement timeout per call, wakeups only through listen_url). Set pooler="
            "'transaction' to say so, or pooler='session' if it pins sessions",
            config.schema,
            extra=fields("pooler.detected", schema=config.schema, mode="transaction"),
        )
        return Pooling("transaction", detected=True)
    if config.pooler == "direct":
        log.warning(
            "schema %s: pooler='direct', but a connection pooler sits between the provider "
            "and the server; behind transaction pooling, prepared statements and LISTEN fail",
            config.schema,
            extra=fields("pooler.unexpected", schema=config.schema),
        )
    return configured
