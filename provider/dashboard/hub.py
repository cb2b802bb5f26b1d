"""What the dashboard reads and acts through: one TaskHub, whose pool
refuses a session that can do more than a role that controls the hub on
each connection it opens (provider/client/session_standing.py), running the
runbook's plans (provider/client/operator_plans.py) and the runtime's own
(the same plans `taskhub-pg inspect`, `cancel` and `delete-instance` run).
Each call has STATEMENT_TIMEOUT_MS: a page that would read for longer is
cut off (a 503), not left holding a connection of the pool."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from provider.client.operator_plans import OperatorPlans
from provider.client.plans import Plan
from provider.client.pooling import ONE_SHOT_POOLER
from provider.client.task_hub import TaskHub
from provider.config import TaskHubConfig

T = TypeVar("T")
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
        self.url = url
        self.schema = schema
        self.clock = clock
        self.statement_timeout_ms = statement_timeout_ms
        self.plans = OperatorPlans(TaskHubConfig(url=url, schema=schema))
        self._counted: tuple[float, dict[str, int] | None] | None = None
        self.task_hub: TaskHub | None = None

    def open(self) -> None:
        self.task_hub = TaskHub.connect(
            self.url,
            self.schema,
            pool_min_size=1,
            # Nothing prepared and each call bounded in its own transaction:
            # the pages may go through a transaction pooler.
            pooler=ONE_SHOT_POOLER,
            statement_timeout_ms=self.statement_timeout_ms,
        )

    def close(self) -> None:
        if self.task_hub is not None:
            self.task_hub.close()

    @property
    def calls(self) -> TaskHub:
        assert self.task_hub is not None, "the dashboard's hub is not open"
        return self.task_hub

    def run(self, plan: Plan[T]) -> T:
        """The plan's result, on the pool."""
        return self.calls.run(plan)

    def status_counts(self) -> dict[str, int] | None:
        """Instances by status (OperatorPlans.status_counts), counted at most
        every STATUS_COUNTS_FOR_S seconds."""
        now = self.clock()
        if self._counted is None or now - self._counted[0] >= STATUS_COUNTS_FOR_S:
            self._counted = (now, self.run(self.plans.status_counts()))
        return self._counted[1]
