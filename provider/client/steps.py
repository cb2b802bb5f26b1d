"""How a runner makes the steps of a plan, whoever holds the connection (a
pool of TaskHub's, or the caller, provider/client/on_connection.py): each
step's statement and rows, its failure as a TaskHubError (logged and heard
by the call observers, as every call is), and the drive that sends each
step's rows into the plan, or raises its failure there.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from provider.client import reads
from provider.client.call_observers import observe_call
from provider.client.plans import Call, Plan, Rows, Step
from provider.config import TaskHubConfig
from provider.errors import LockLost, TaskHubError, translate
from provider.logs import fields

log = logging.getLogger("provider.client.procedures")
T = TypeVar("T")


def procedure_query(schema: str, call: Call) -> sql.Composed:
    """SELECT * FROM <schema>.<function>(p_x => %(p_x)s, ...): the arguments
    by name, as the procedure declares them."""
    return sql.SQL("SELECT * FROM {}.{}({})").format(
        sql.Identifier(schema),
        sql.Identifier(call.function),
        sql.SQL(", ").join(
            sql.SQL("{} => {}").format(sql.Identifier(name), sql.Placeholder(name))
            for name in call.args
        ),
    )


def statement_of(schema: str, step: Step) -> tuple[sql.Composed, dict[str, Any]]:
    """The step's statement on the hub in `schema`, and its parameters."""
    if isinstance(step, Call):
        return procedure_query(schema, step), step.args
    return reads.statement(schema, step)


def name_of(step: Step) -> str:
    """The procedure a call runs, or the relation a read reads."""
    return step.function if isinstance(step, Call) else step.name


def timeout_of(step: Step, otherwise: int | None) -> int | None:
    """A read's own bound, else `otherwise` (the runner's per-call timeout)."""
    if isinstance(step, reads.Read) and step.timeout_ms is not None:
        return step.timeout_ms
    return otherwise


def _bounded(query: sql.Composed, timeout_ms: int) -> sql.Composed:
    """The call after SET LOCAL statement_timeout, as one simple-protocol
    message: the server runs the two as one implicit transaction, so the
    setting bounds the call and ends with it (nothing stays on a session a
    transaction pooler hands on), in one round trip. Measured against a
    pipelined BEGIN / SET LOCAL / call / COMMIT (4 statements, 2 syncs): 0.11
    ms against 0.43 ms a call, the call alone 0.09 ms (bench.pooler_modes).
    Inside a transaction the caller holds, the setting lasts until it ends."""
    return sql.SQL("SET LOCAL statement_timeout = {}; ").format(sql.Literal(timeout_ms)) + query


def rows_of(
    conn: psycopg.Connection[Any], query: sql.Composed, args: dict[str, Any], timeout_ms: int | None
) -> Rows:
    """The statement's rows; with `timeout_ms`, bounded as `_bounded` says
    (its arguments then quoted by psycopg's client-side cursor, as the
    simple protocol takes no parameters)."""
    if timeout_ms is None:
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute(query, args)
            return cur.fetchall() if cur.description else []
    with psycopg.ClientCursor(conn, row_factory=dict_row) as client_side:
        client_side.execute(_bounded(query, timeout_ms), args)
        client_side.nextset()  # past the SET's empty result
        return client_side.fetchall() if client_side.description else []


async def rows_of_async(
    conn: psycopg.AsyncConnection[Any],
    query: sql.Composed,
    args: dict[str, Any],
    timeout_ms: int | None,
) -> Rows:
    """As `rows_of`, on the running event loop."""
    if timeout_ms is None:
        async with conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(query, args)
            return await cur.fetchall() if cur.description else []
    async with psycopg.AsyncClientCursor(conn, row_factory=dict_row) as client_side:
        await client_side.execute(_bounded(query, timeout_ms), args)
        client_side.nextset()  # past the SET's empty result
        return await client_side.fetchall() if client_side.description else []


def operation_of(plan: Plan[Any]) -> str | None:
    """The public operation a plan is: its generator function's name."""
    name = getattr(plan, "__name__", None)
    return name if isinstance(name, str) and not name.startswith("_") else None


def _log_step(
    config: TaskHubConfig, operation: str, started: float, failure: TaskHubError | None
) -> None:
    """A lost lease is the caller's business (DEBUG); a refused call is
    INFO; a database in trouble (retryable) is a WARNING."""
    record = fields(
        "procedure.failed" if failure else "procedure.called",
        schema=config.schema,
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


def failed(
    config: TaskHubConfig, step: Step, operation: str | None, started: float, error: Exception
) -> TaskHubError:
    """The step's failure as the operation's TaskHubError, logged and observed."""
    failure = translate(operation or name_of(step), error)
    _log_step(config, name_of(step), started, failure)
    observe_call(config.schema, name_of(step), time.monotonic() - started, failure)
    return failure


def succeeded(config: TaskHubConfig, step: Step, started: float) -> None:
    if log.isEnabledFor(logging.DEBUG):
        _log_step(config, name_of(step), started, None)
    observe_call(config.schema, name_of(step), time.monotonic() - started, None)


def _named(error: TaskHubError, operation: str | None) -> TaskHubError:
    """An error raised inside a plan (by a call of an inner plan, or by a
    check in Python), as the operation the caller called."""
    if operation is None or error.operation == operation:
        return error
    return error.renamed(operation)


def drive(plan: Plan[T], perform: Callable[[Step], Rows], operation: str | None) -> T:
    """Make each step the plan asks for; its return value is the result. A
    step's failure is raised in the plan, which may handle it."""
    try:
        step = next(plan)
        while True:
            try:
                rows = perform(step)
            except TaskHubError as failure:
                step = plan.throw(failure)
            else:
                step = plan.send(rows)
    except StopIteration as done:
        return cast(T, done.value)
    except TaskHubError as error:
        named = _named(error, operation)
        if named is error:
            raise
        raise named from error


async def drive_async(
    plan: Plan[T], perform: Callable[[Step], Awaitable[Rows]], operation: str | None
) -> T:
    """As `drive`, awaiting each step."""
    try:
        step = next(plan)
        while True:
            try:
                rows = await perform(step)
            except TaskHubError as failure:
                step = plan.throw(failure)
            else:
                step = plan.send(rows)
    except StopIteration as done:
        return cast(T, done.value)
    except TaskHubError as error:
        named = _named(error, operation)
        if named is error:
            raise
        raise named from error
