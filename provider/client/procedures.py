"""The connection pool and the one way the provider calls a procedure."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from provider.config import TaskHubConfig
from provider.errors import LockLost, TaskHubError, translate
from provider.logs import fields

log = logging.getLogger(__name__)


def now_ms() -> int:
    """This host's clock in Unix epoch milliseconds (the procedures' p_now_ms)."""
    return time.time_ns() // 1_000_000


class ProcedureClient:
    """A pool of autocommit connections to one task-hub schema.

    Every call is one procedure call and so one transaction, exactly as the
    duroxide runtime calls them. Errors come out as LockLost, RetryableError
    or PermanentError.
    """

    def __init__(self, config: TaskHubConfig, *, open_pool: bool = True) -> None:
        self.config = config
        connection: dict[str, Any] = {
            "autocommit": True,
            "application_name": config.application_name,
        }
        if config.statement_timeout_ms is not None:
            connection["options"] = f"-c statement_timeout={config.statement_timeout_ms}"
        self._pool = ConnectionPool(
            config.url,
            min_size=config.pool_min_size,
            max_size=config.pool_max_size,
            timeout=config.pool_timeout_s,
            kwargs=connection,
            open=open_pool,
            # No check on checkout: psycopg_pool backs off a second or more
            # after a failed check. A dead connection fails its one call as a
            # RetryableError instead, and the pool replaces it at once.
            name=f"taskhub:{config.schema}",
        )
        self._schema = sql.Identifier(config.schema)

    def close(self) -> None:
        self._pool.close()

    @contextmanager
    def _cursor(
        self, operation: str, timeout_s: float | None = None
    ) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        started = time.monotonic()
        try:
            with (
                self._pool.connection(timeout=timeout_s) as conn,
                conn.cursor(row_factory=dict_row) as cur,
            ):
                yield cur
        except (psycopg.Error, PoolTimeout) as error:
            if isinstance(error, psycopg.OperationalError):
                # The server may have dropped every connection (restart, failover,
                # terminated backends): replace the other dead ones now, so the
                # caller's retry does not meet them one by one.
                self._pool.check()
            failure = translate(operation, error)
            self._log_call(operation, started, failure)
            raise failure from error
        if log.isEnabledFor(logging.DEBUG):
            self._log_call(operation, started, None)

    def _log_call(self, operation: str, started: float, failure: TaskHubError | None) -> None:
        """A lost lease is the caller's business (DEBUG); a refused call is
        INFO; a database in trouble (retryable) is a WARNING."""
        record = fields(
            "procedure.failed" if failure else "procedure.called",
            schema=self.config.schema,
            operation=operation,
            duration_ms=round((time.monotonic() - started) * 1000, 2),
            sqlstate=failure.sqlstate if failure else None,
            error_class=type(failure).__name__ if failure else None,
        )
        if failure is None:
            log.debug("%s returned", operation, extra=record)
        elif isinstance(failure, LockLost):
            log.debug("%s", failure, extra=record)
        elif failure.retryable:
            log.warning("%s", failure, extra=record)
        else:
            log.info("%s", failure, extra=record)

    def _call(
        self, function: str, *, timeout_s: float | None = None, **args: Any
    ) -> list[dict[str, Any]]:
        """SELECT * FROM <schema>.<function>(p_x => %(p_x)s, ...): the arguments
        by name, as the procedure declares them, and every row by column name.

        timeout_s bounds the wait for a pooled connection (default: the pool's).
        """
        query = sql.SQL("SELECT * FROM {}.{}({})").format(
            self._schema,
            sql.Identifier(function),
            sql.SQL(", ").join(
                sql.SQL("{} => {}").format(sql.Identifier(name), sql.Placeholder(name))
                for name in args
            ),
        )
        with self._cursor(function, timeout_s) as cur:
            cur.execute(query, args)
            return cur.fetchall() if cur.description else []

    def _scalar(self, function: str, *, timeout_s: float | None = None, **args: Any) -> Any:
        """The value a procedure returns (a function of one result)."""
        rows = self._call(function, timeout_s=timeout_s, **args)
        return next(iter(rows[0].values())) if rows else None
