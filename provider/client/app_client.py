"""Client and AsyncClient: what an application needs of a task hub, apart
from the runtime's contract (TaskHub): start orchestrations once, read and
wait for their outcome, find them, cancel them and raise events.

    with Client.connect("postgresql://app@db/app", schema="orders") as client:
        client.start("order-42", "ProcessOrder", {"sku": "A-1"})
        done = client.wait_for_completion("order-42", timeout_s=30)

The hub refuses what the CLI refuses, as typed errors (provider/errors.py):
InstanceNotFound, InstanceEnded, StartConflict; get_output adds
InstanceFailed and InstanceNotEnded, wait_for_completion WaitTimeout, the
schedules' calls ScheduleNotFound. On a
hub before revision 0027 every call says so (ConfigurationError).

wait_for_completion listens to the hub's wakeups where it can, and polls
where it cannot (provider/client/completion_wait.py): a client that waits
holds a share of its process's LISTEN connection until it closes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, Unpack

import psycopg

from provider import tracing
from provider.client.application import ApplicationPlans
from provider.client.completion_wait import (
    Progress,
    WaitWakeups,
    wait_async,
    wait_blocking,
    waiting,
)
from provider.client.plans import Plan, awaitable, blocking
from provider.client.procedures import AsyncProcedureClient, ProcedureClient
from provider.config import TaskHubConfig, TaskHubSettings
from provider.errors import (
    ConfigurationError,
    InstanceFailed,
    InstanceNotEnded,
    InstanceNotFound,
    InvalidInput,
    TaskHubError,
    refined,
)
from provider.types import (
    InstanceStatus,
    StartRequest,
    StartResult,
)

T = TypeVar("T")
# The functions the client calls that came after revision 0026, by the
# revision that added them.
_ADDED_IN = {
    "taskhub_start_orchestrations": "0027",
    "taskhub_start_steered_orchestrations": "0029",
    "taskhub_search_instances": "0028",
    "taskhub_read_schedules": "0029",
    "taskhub_set_steered_schedule": "0029",
    "taskhub_fire_schedule_outcome": "0029",
    "taskhub_count_schedule_failure": "0029",
}


def _for_the_application(error: TaskHubError) -> TaskHubError:
    added = [rev for name, rev in _ADDED_IN.items() if name in error.message]
    if error.sqlstate == "42883" and added:
        return ConfigurationError(
            error.operation,
            f"this hub's schema is older than revision {added[0]}, which this call needs:"
            " upgrade it (taskhub-pg upgrade)",
            error.sqlstate,
        )
    return refined(error)


def _checked_timeout(timeout_s: float) -> float:
    if not isinstance(timeout_s, int | float) or isinstance(timeout_s, bool) or timeout_s < 0:
        raise InvalidInput("wait_for_completion", "timeout_s must be a number of seconds >= 0")
    return float(timeout_s)


def _required(status: InstanceStatus | None, instance_id: str) -> InstanceStatus:
    if status is None:
        raise InstanceNotFound("get_status", f"instance {instance_id} not found", "P0002")
    return status


def _output_of(status: InstanceStatus) -> Any:
    """The result of a Completed instance, decoded from its JSON text."""
    if status.status == "Failed":
        raise InstanceFailed("get_output", status.instance_id, status.output)
    if status.status != "Completed":
        raise InstanceNotEnded(
            "get_output", f"instance {status.instance_id} has not completed ({status.status})"
        )
    if status.output is None:
        return None
    try:
        return json.loads(status.output)
    except ValueError:
        return status.output  # not JSON: the text as the runtime stored it


class Client(ProcedureClient):
    """The application's face of one task hub: blocking calls on a pool."""

    plans: ApplicationPlans

    def __init__(self, config: TaskHubConfig, *, open_pool: bool = True) -> None:
        self._waits = WaitWakeups()
        super().__init__(config, open_pool=open_pool)
        self.plans = ApplicationPlans(config)

    @classmethod
    def connect(
        cls, url: str, schema: str = "public", **settings: Unpack[TaskHubSettings]
    ) -> Client:
        """The client, connected (ConfigurationError when it cannot connect)."""
        return cls(TaskHubConfig(url=url, schema=schema, **settings))

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._waits.close()
        super().close()

    def run(self, plan: Plan[T], conn: psycopg.Connection[Any] | None = None) -> T:
        try:
            return super().run(plan, conn)
        except TaskHubError as error:
            better = _for_the_application(error)
            if better is error:
                raise
            raise better from error

    def start(
        self,
        instance_id: str,
        orchestration: str,
        input: Any = None,
        *,
        version: str | None = None,
        priority: int = 0,
        labels: Mapping[str, str] | None = None,
        conn: psycopg.Connection[Any] | None = None,
    ) -> StartResult:
        """Start the orchestration once. started=False: it already exists (or
        its start is queued) with the same orchestration and input, nothing
        written; with another one, StartConflict. With `conn`, the start is
        written in the caller's open transaction (an outbox) and commits or
        rolls back with it. `priority` (0 to 9, higher first) and `labels`
        ({"tenant": "acme"}) steer it and all it causes
        (docs/flow-control.md); a start without them is as before."""
        plan = self.plans.start(instance_id, orchestration, input, version, priority, labels)
        return self.run(plan, conn)

    def start_many(
        self, starts: Iterable[StartRequest], *, conn: psycopg.Connection[Any] | None = None
    ) -> list[StartResult]:
        """Many starts in one round trip, all or none, each as start()."""
        return self.run(self.plans.start_many(list(starts)), conn)

    def get_status(self, instance_id: str) -> InstanceStatus:
        """Where the instance stands; InstanceNotFound when there is none."""
        return _required(self.run(self.plans.status(instance_id)), instance_id)

    def wait_for_completion(self, instance_id: str, timeout_s: float = 60.0) -> InstanceStatus:
        """Its status once it has Completed or Failed; WaitTimeout after
        timeout_s, InstanceNotFound if there is no such instance."""
        timeout_s = _checked_timeout(timeout_s)
        ear = self._waits.ear(self.config, self.pooling.listen_url(self.config))
        with tracing.WaitSpan(self.config.schema, instance_id) as span:
            return wait_blocking(
                waiting(timeout_s, ear, span),
                ear,
                arm=lambda pid: self.run(self.plans.set_wakeup_waiting(pid)),
                look=lambda: self.run(self.plans.wait_for_completion(instance_id)),
            )

    def get_output(self, instance_id: str) -> Any:
        """The result of a Completed instance; InstanceFailed (with its
        error) or InstanceNotEnded otherwise."""
        return _output_of(self.get_status(instance_id))

    find = blocking(ApplicationPlans.find)
    cancel = blocking(ApplicationPlans.cancel)
    restart = blocking(ApplicationPlans.restart)
    restarts = blocking(ApplicationPlans.restarts)

    def raise_event(
        self,
        instance_id: str,
        name: str,
        data: Any = None,
        *,
        conn: psycopg.Connection[Any] | None = None,
    ) -> None:
        """Raise the external event `name` with `data` (any JSON value).
        InstanceNotFound, or InstanceEnded when it has ended."""
        self.run(self.plans.raise_event(instance_id, name, data), conn)

    # schedules (provider/client/scheduler.py starts their ticks)
    set_schedule = blocking(ApplicationPlans.set_schedule)
    pause_schedule = blocking(ApplicationPlans.pause_schedule)
    resume_schedule = blocking(ApplicationPlans.resume_schedule)
    remove_schedule = blocking(ApplicationPlans.remove_schedule)
    list_schedules = blocking(ApplicationPlans.list_schedules)
    fire_schedule = blocking(ApplicationPlans.fire_schedule)
    fire_schedule_outcome = blocking(ApplicationPlans.fire_schedule_outcome)
    count_schedule_failure = blocking(ApplicationPlans.count_schedule_failure)

    # flow control, enforced by the hub's fetches (docs/flow-control.md)
    pause_activity = blocking(ApplicationPlans.pause_activity)
    resume_activity = blocking(ApplicationPlans.resume_activity)
    set_activity_limit = blocking(ApplicationPlans.set_activity_limit)
    remove_activity_limit = blocking(ApplicationPlans.remove_activity_limit)
    set_activity_rate = blocking(ApplicationPlans.set_activity_rate)
    remove_activity_rate = blocking(ApplicationPlans.remove_activity_rate)
    pause_label = blocking(ApplicationPlans.pause_label)
    resume_label = blocking(ApplicationPlans.resume_label)
    set_label_limit = blocking(ApplicationPlans.set_label_limit)
    remove_label_limit = blocking(ApplicationPlans.remove_label_limit)
    set_label_rate = blocking(ApplicationPlans.set_label_rate)
    remove_label_rate = blocking(ApplicationPlans.remove_label_rate)
    pause_orchestration = blocking(ApplicationPlans.pause_orchestration)
    resume_orchestration = blocking(ApplicationPlans.resume_orchestration)
    set_orchestration_limit = blocking(ApplicationPlans.set_orchestration_limit)
    remove_orchestration_limit = blocking(ApplicationPlans.remove_orchestration_limit)
    flow_rules = blocking(ApplicationPlans.flow_rules)


class AsyncClient(AsyncProcedureClient):
    """Client for asyncio: the same methods, arguments, results and errors, awaited."""

    plans: ApplicationPlans

    def __init__(self, config: TaskHubConfig) -> None:
        self._waits = WaitWakeups()
        super().__init__(config)
        self.plans = ApplicationPlans(config)

    @classmethod
    def connect(
        cls, url: str, schema: str = "public", **settings: Unpack[TaskHubSettings]
    ) -> AsyncClient:
        """The client; its pool opens on `async with` (or `await client.open()`)."""
        return cls(TaskHubConfig(url=url, schema=schema, **settings))

    async def __aenter__(self) -> AsyncClient:
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        await asyncio.to_thread(self._waits.close)  # joins the listener's thread
        await super().close()

    async def run(self, plan: Plan[T], conn: psycopg.AsyncConnection[Any] | None = None) -> T:
        try:
            return await super().run(plan, conn)
        except TaskHubError as error:
            better = _for_the_application(error)
            if better is error:
                raise
            raise better from error

    async def start(
        self,
        instance_id: str,
        orchestration: str,
        input: Any = None,
        *,
        version: str | None = None,
        priority: int = 0,
        labels: Mapping[str, str] | None = None,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> StartResult:
        """As Client.start."""
        plan = self.plans.start(instance_id, orchestration, input, version, priority, labels)
        return await self.run(plan, conn)

    async def start_many(
        self, starts: Iterable[StartRequest], *, conn: psycopg.AsyncConnection[Any] | None = None
    ) -> list[StartResult]:
        """As Client.start_many."""
        return await self.run(self.plans.start_many(list(starts)), conn)

    async def get_status(self, instance_id: str) -> InstanceStatus:
        """As Client.get_status."""
        return _required(await self.run(self.plans.status(instance_id)), instance_id)

    async def wait_for_completion(
        self, instance_id: str, timeout_s: float = 60.0
    ) -> InstanceStatus:
        """As Client.wait_for_completion."""
        timeout_s = _checked_timeout(timeout_s)
        ear = self._waits.ear(self.config, self.pooling.listen_url(self.config))

        async def arm(pid: int) -> None:
            await self.run(self.plans.set_wakeup_waiting(pid))

        async def look() -> Progress:
            return await self.run(self.plans.wait_for_completion(instance_id))

        with tracing.WaitSpan(self.config.schema, instance_id) as span:
            return await wait_async(waiting(timeout_s, ear, span), ear, arm, look)

    async def get_output(self, instance_id: str) -> Any:
        """As Client.get_output."""
        return _output_of(await self.get_status(instance_id))

    find = awaitable(ApplicationPlans.find)
    cancel = awaitable(ApplicationPlans.cancel)
    restart = awaitable(ApplicationPlans.restart)
    restarts = awaitable(ApplicationPlans.restarts)

    async def raise_event(
        self,
        instance_id: str,
        name: str,
        data: Any = None,
        *,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> None:
        """As Client.raise_event."""
        await self.run(self.plans.raise_event(instance_id, name, data), conn)

    set_schedule = awaitable(ApplicationPlans.set_schedule)
    pause_schedule = awaitable(ApplicationPlans.pause_schedule)
    resume_schedule = awaitable(ApplicationPlans.resume_schedule)
    remove_schedule = awaitable(ApplicationPlans.remove_schedule)
    list_schedules = awaitable(ApplicationPlans.list_schedules)
    pause_activity = awaitable(ApplicationPlans.pause_activity)
    resume_activity = awaitable(ApplicationPlans.resume_activity)
    set_activity_limit = awaitable(ApplicationPlans.set_activity_limit)
    remove_activity_limit = awaitable(ApplicationPlans.remove_activity_limit)
    set_activity_rate = awaitable(ApplicationPlans.set_activity_rate)
    remove_activity_rate = awaitable(ApplicationPlans.remove_activity_rate)
    pause_label = awaitable(ApplicationPlans.pause_label)
    resume_label = awaitable(ApplicationPlans.resume_label)
    set_label_limit = awaitable(ApplicationPlans.set_label_limit)
    remove_label_limit = awaitable(ApplicationPlans.remove_label_limit)
    set_label_rate = awaitable(ApplicationPlans.set_label_rate)
    remove_label_rate = awaitable(ApplicationPlans.remove_label_rate)
    pause_orchestration = awaitable(ApplicationPlans.pause_orchestration)
    resume_orchestration = awaitable(ApplicationPlans.resume_orchestration)
    set_orchestration_limit = awaitable(ApplicationPlans.set_orchestration_limit)
    remove_orchestration_limit = awaitable(ApplicationPlans.remove_orchestration_limit)
    flow_rules = awaitable(ApplicationPlans.flow_rules)
