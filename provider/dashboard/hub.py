"""What the dashboard reads and acts through: a small pool of connections
for the runbook, and a TaskHub for the runtime's calls (the same calls
`taskhub-pg inspect instances`, `cancel` and `delete-instance` make). Each
statement of either has STATEMENT_TIMEOUT_MS: a page that would read for
longer is cut off (a 503), not left holding a connection of the pool."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from provider.client.bounded import bound_statements
from provider.client.pooling import ONE_SHOT_POOLER
from provider.client.session_standing import refuse_a_privileged_session
from provider.client.task_hub import TaskHub
from provider.operations import runbook

# Counting instances by status reads every instance: the overview, which
# refreshes every few seconds, counts at most this often.
STATUS_COUNTS_FOR_S = 15.0
STATEMENT_TIMEOUT_MS = 10_000


class Hub:
    """Opened when the app starts, closed when it stops."""

    def __init__(
        self,
        url: str,
        schema: str,
        clock: Callable[[], float] = time.monotonic,
        statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
    ) -> None:
        self.schema = schema
        self.clock = clock
        self.statement_timeout_ms = statement_timeout_ms
        self._counted: tuple[float, dict[str, int] | None] | None = None
        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=4,
            # Nothing prepared: the reads may go through a transaction pooler.
            kwargs={"autocommit": True, "prepare_threshold": None},
            configure=self._configure,
            open=False,
        )
        self.url = url
        self.task_hub: TaskHub | None = None

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Each connection the pool opens: refused where the session can do
        more than a role that controls the hub (the pages read its views),
        then bounded by the statement timeout."""
        refuse_a_privileged_session(conn, self.schema, "taskhub-pg dashboard")
        bound_statements(conn, timeout_ms=self.statement_timeout_ms)

    def open(self) -> None:
        self.pool.open(wait=True, timeout=10)
        self.task_hub = TaskHub.connect(
            self.url,
            self.schema,
            pool_min_size=1,
            pooler=ONE_SHOT_POOLER,
            statement_timeout_ms=self.statement_timeout_ms,
        )

    def close(self) -> None:
        if self.task_hub is not None:
            self.task_hub.close()
        self.pool.close()

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        with self.pool.connection() as conn:
            yield conn

    @property
    def calls(self) -> TaskHub:
        assert self.task_hub is not None, "the dashboard's hub is not open"
        return self.task_hub

    def status_counts(self) -> dict[str, int] | None:
        """Instances by status (runbook.status_counts), counted at most every
        STATUS_COUNTS_FOR_S seconds."""
        now = self.clock()
        if self._counted is None or now - self._counted[0] >= STATUS_COUNTS_FOR_S:
            with self.connection() as conn:
                self._counted = (now, runbook.status_counts(conn, self.schema))
        return self._counted[1]
