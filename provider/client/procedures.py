"""The connection pools and the one way the provider calls a procedure.

`ProcedureClient` (blocking) and `AsyncProcedureClient` (asyncio) run the
plans of `provider.client.plans`: each call a plan yields is one procedure
call, and so one transaction, exactly as the duroxide runtime calls them (a
read, one statement; provider/client/steps.py makes each).
Errors come out as LockLost, RetryableError or PermanentError on both, named
after the operation the caller called (the plan), not the procedures it made.
Opening a pool makes its first connection at once (provider/client/connecting.py).
"""

from __future__ import annotations

import time
import weakref
from contextlib import nullcontext
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from provider.client.connecting import (
    check_url,
    direct_url,
    direct_url_async,
    probe,
    probe_async,
)
from provider.client.plans import AsyncRunner, Call, Plan, Rows, Step, SyncRunner
from provider.client.pooling import Pooling, after_looking
from provider.client.session_standing import (
    refuse_a_privileged_session,
    refuse_a_privileged_session_async,
)
from provider.client.steps import (
    drive,
    drive_async,
    failed,
    operation_of,
    rows_of,
    rows_of_async,
    statement_of,
    succeeded,
    timeout_of,
)
from provider.config import TaskHubConfig
from provider.errors import REPLACE_CONNECTION_STATES
from provider.shapes import activity_body
from provider.tracing import CallSpan, call_span
from provider.types import OrchestrationItem, WorkItemLease

T = TypeVar("T")


def now_ms() -> int:
    """This host's clock in Unix epoch milliseconds (the procedures' p_now_ms)."""
    return time.time_ns() // 1_000_000


def instance_of(result: object) -> str | None:
    """The instance a leased item is for (its span's taskhub.instance_id)."""
    if isinstance(result, OrchestrationItem):
        return result.instance_id
    if isinstance(result, WorkItemLease):
        body = activity_body(result.work_item)
        instance = body.get("instance") if body is not None else None
        return instance if isinstance(instance, str) else None
    return None


class ProcedureClient(SyncRunner):
    """A blocking pool of autocommit connections to one task-hub schema."""

    def __init__(self, config: TaskHubConfig, *, open_pool: bool = True) -> None:
        """With open_pool (the default), the first connection is made now, and
        a hub that cannot connect raises ConfigurationError; without it,
        nothing connects until open()."""
        check_url(f"{type(self).__name__}.connect", config.url)
        if config.listen_url is not None:
            check_url(f"{type(self).__name__}.connect", config.listen_url)
        self.config = config
        self.pooling = Pooling.configured(config)
        self.start_once = True  # until the hub looks at its schema (connecting.Look)
        self._looked: weakref.WeakSet[Any] = weakref.WeakSet()  # _look_once
        self._pool = ConnectionPool(
            config.url,
            min_size=config.pool_min_size,
            max_size=config.pool_max_size,
            timeout=config.pool_timeout_s,
            kwargs=self.pooling.connection_settings(config),
            configure=self._configure,
            open=False,
            # No check on checkout: psycopg_pool backs off a second or more
            # after a failed check. A dead connection fails its one call as a
            # RetryableError instead, and the pool replaces it at once.
            name=f"taskhub:{config.schema}",
        )
        if open_pool:
            self._open(f"{type(self).__name__}.connect")

    def open(self) -> None:
        """Open a hub made with open_pool=False (as connect does)."""
        self._open(f"{type(self).__name__}.open")

    def _open(self, operation: str) -> None:
        if self._pool.closed:
            settings = self.pooling.connection_settings(self.config)
            if self.config.citus_direct:  # its look on the URL is the probe
                self._pool.conninfo, look = direct_url(operation, self.config, settings)
            else:
                look = probe(operation, self.config, settings)
            self.pooling = after_looking(self.config, look.pooled)
            self.start_once = look.start_once
            self._pool.kwargs = self.pooling.connection_settings(self.config)
            self._pool.open()

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        self.pooling.set_up(conn, self.config)

    def _look_once(self, conn: psycopg.Connection[Any]) -> None:
        """Each connection, at its first call: refused where the session can
        do more than a role that controls the hub (session_standing.py). At
        its first call, not as the pool opens it: a connection lost there
        fails that one call as a RetryableError, and the pool replaces it at
        once, where a failure in the pool's own set-up holds the pool back
        a second or more."""
        if conn not in self._looked:
            refuse_a_privileged_session(conn, self.config.schema, f"{type(self).__name__}.connect")
            self._looked.add(conn)

    def close(self) -> None:
        self._pool.close()

    @property
    def _per_call_timeout_ms(self) -> int | None:
        return self.pooling.per_call_timeout_ms(self.config)

    def run(self, plan: Plan[T], conn: psycopg.Connection[Any] | None = None) -> T:
        """Make each call the plan asks for; its return value is the result.

        With `conn`, the calls run on the caller's connection, inside whatever
        transaction it has open: they commit or roll back with it."""
        operation = operation_of(plan)
        span = call_span(self.config.schema, operation)
        if span is None:
            return self._drive(plan, conn, operation, None)
        with span:
            result = self._drive(plan, conn, operation, span)
            span.returned(result)
            span.instance(instance_of(result))
            return result

    def _drive(
        self,
        plan: Plan[T],
        conn: psycopg.Connection[Any] | None,
        operation: str | None,
        span: CallSpan | None,
    ) -> T:
        return drive(plan, lambda step: self._execute(step, conn, operation, span), operation)

    def _execute(
        self,
        step: Step,
        own: psycopg.Connection[Any] | None,
        operation: str | None,
        span: CallSpan | None,
    ) -> Rows:
        started = time.monotonic()
        query, args = statement_of(self.config.schema, step)
        if span is not None:
            span.saw_arguments(args)
        timeout_s = step.timeout_s if isinstance(step, Call) else None
        try:
            with nullcontext(own) if own is not None else self._pool.connection(timeout_s) as conn:
                try:
                    self._look_once(conn)
                    timeout_ms = timeout_of(
                        step, None if own is not None else self._per_call_timeout_ms
                    )
                    rows = rows_of(conn, query, args, timeout_ms)
                except psycopg.Error as error:
                    if own is None and error.sqlstate in REPLACE_CONNECTION_STATES:
                        conn.close()  # the pool drops it on return
                    raise
        except (psycopg.Error, PoolTimeout) as error:
            if isinstance(error, psycopg.OperationalError) and own is None:
                # The server may have dropped every connection (restart, failover,
                # terminated backends): replace the other dead ones now, so the
                # caller's retry does not meet them one by one.
                self._pool.check()
            raise failed(self.config, step, operation, started, error) from error
        succeeded(self.config, step, started)
        return rows


class AsyncProcedureClient(AsyncRunner):
    """An asyncio pool of autocommit connections to one task-hub schema.

    The pool opens on `await open()` (or `async with`), as psycopg_pool asks;
    the URL is checked at once, the first connection made on open()."""

    def __init__(self, config: TaskHubConfig) -> None:
        check_url(f"{type(self).__name__}.connect", config.url)
        if config.listen_url is not None:
            check_url(f"{type(self).__name__}.connect", config.listen_url)
        self.config = config
        self.pooling = Pooling.configured(config)
        self.start_once = True  # until the hub looks at its schema (connecting.Look)
        self._looked: weakref.WeakSet[Any] = weakref.WeakSet()  # _look_once
        self._pool = AsyncConnectionPool(
            config.url,
            min_size=config.pool_min_size,
            max_size=config.pool_max_size,
            timeout=config.pool_timeout_s,
            kwargs=self.pooling.connection_settings(config),
            configure=self._configure,
            open=False,
            name=f"taskhub-async:{config.schema}",
        )

    async def open(self) -> None:
        """Make the first connection (a hub that cannot connect raises
        ConfigurationError), then open the pool."""
        if self._pool.closed:
            operation = f"{type(self).__name__}.open"
            settings = self.pooling.connection_settings(self.config)
            if self.config.citus_direct:  # its look on the URL is the probe
                self._pool.conninfo, look = await direct_url_async(operation, self.config, settings)
            else:
                look = await probe_async(operation, self.config, settings)
            self.pooling = after_looking(self.config, look.pooled)
            self.start_once = look.start_once
            self._pool.kwargs = self.pooling.connection_settings(self.config)
            await self._pool.open()

    async def _configure(self, conn: psycopg.AsyncConnection[Any]) -> None:
        await self.pooling.set_up_async(conn, self.config)

    async def _look_once(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """As ProcedureClient._look_once."""
        if conn not in self._looked:
            operation = f"{type(self).__name__}.connect"
            await refuse_a_privileged_session_async(conn, self.config.schema, operation)
            self._looked.add(conn)

    @property
    def _per_call_timeout_ms(self) -> int | None:
        return self.pooling.per_call_timeout_ms(self.config)

    async def close(self) -> None:
        await self._pool.close()

    async def run(self, plan: Plan[T], conn: psycopg.AsyncConnection[Any] | None = None) -> T:
        """Make each call the plan asks for; its return value is the result.

        With `conn`, the calls run on the caller's connection, inside whatever
        transaction it has open: they commit or roll back with it."""
        operation = operation_of(plan)
        span = call_span(self.config.schema, operation)
        if span is None:
            return await self._drive(plan, conn, operation, None)
        with span:
            result = await self._drive(plan, conn, operation, span)
            span.returned(result)
            span.instance(instance_of(result))
            return result

    async def _drive(
        self,
        plan: Plan[T],
        conn: psycopg.AsyncConnection[Any] | None,
        operation: str | None,
        span: CallSpan | None,
    ) -> T:
        async def perform(step: Step) -> Rows:
            return await self._execute(step, conn, operation, span)

        return await drive_async(plan, perform, operation)

    async def _execute(
        self,
        step: Step,
        own: psycopg.AsyncConnection[Any] | None,
        operation: str | None,
        span: CallSpan | None,
    ) -> Rows:
        started = time.monotonic()
        query, args = statement_of(self.config.schema, step)
        if span is not None:
            span.saw_arguments(args)
        timeout_s = step.timeout_s if isinstance(step, Call) else None
        try:
            async with (
                nullcontext(own) if own is not None else self._pool.connection(timeout_s)
            ) as conn:
                try:
                    await self._look_once(conn)
                    timeout_ms = timeout_of(
                        step, None if own is not None else self._per_call_timeout_ms
                    )
                    rows = await rows_of_async(conn, query, args, timeout_ms)
                except psycopg.Error as error:
                    if own is None and error.sqlstate in REPLACE_CONNECTION_STATES:
                        await conn.close()  # the pool drops it on return
                    raise
        except (psycopg.Error, PoolTimeout) as error:
            if isinstance(error, psycopg.OperationalError) and own is None:
                await self._pool.check()
            raise failed(self.config, step, operation, started, error) from error
        succeeded(self.config, step, started)
        return rows
