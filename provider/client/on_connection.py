"""Plans run on one connection that its caller opened and owns: the command
line's session (provider/cli/hubs.py `hub_connection`, which pins
search_path and refuses a privileged session before it yields), a metrics
read's (provider/metrics/collector.py, which refuses one on each read).
Each step runs on that connection, in whatever transaction the caller holds
open, unbounded but by the caller's settings and a read's own timeout;
failures come out as the package's errors, as from TaskHub.

    hub = OnConnection(conn, "orders")
    letters = hub.run(hub.plans.dead_letters_page(100))
"""

from __future__ import annotations

import time
from typing import Any, TypeVar

import psycopg

from provider.client.operator_plans import OperatorPlans
from provider.client.plans import Plan, Rows, Step, SyncRunner
from provider.client.steps import (
    drive,
    failed,
    operation_of,
    rows_of,
    statement_of,
    succeeded,
    timeout_of,
)
from provider.config import TaskHubConfig

T = TypeVar("T")


class OnConnection(SyncRunner):
    """The hub in `schema`, reached through `conn` alone."""

    plans: OperatorPlans

    def __init__(self, conn: psycopg.Connection[Any], schema: str) -> None:
        self.conn = conn
        # The URL only names the hub in what is logged: this runner opens nothing.
        self.config = TaskHubConfig(url=conn.info.dsn, schema=schema)
        self.plans = OperatorPlans(self.config)

    def run(self, plan: Plan[T], conn: psycopg.Connection[Any] | None = None) -> T:
        """Make each step the plan asks for on the connection (or on `conn`)."""
        on = conn if conn is not None else self.conn
        operation = operation_of(plan)
        return drive(plan, lambda step: self._execute(on, step, operation), operation)

    def _execute(self, conn: psycopg.Connection[Any], step: Step, operation: str | None) -> Rows:
        started = time.monotonic()
        query, args = statement_of(self.config.schema, step)
        try:
            rows = rows_of(conn, query, args, timeout_of(step, None))
        except psycopg.Error as error:
            raise failed(self.config, step, operation, started, error) from error
        succeeded(self.config, step, started)
        return rows
