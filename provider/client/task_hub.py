"""TaskHub and AsyncTaskHub: the whole provider over one task-hub schema,
blocking and asyncio. Each operation is written once, in HubPlans; a face
only says which runner makes its calls (see provider/client/plans.py).
"""

from __future__ import annotations

from typing import Any, Unpack

import psycopg

from provider.client.instance_control import InstanceControl
from provider.client.instance_state import InstanceState
from provider.client.management import Management
from provider.client.orchestration_queue import OrchestrationQueue
from provider.client.plans import awaitable, blocking
from provider.client.procedures import AsyncProcedureClient, ProcedureClient
from provider.client.wakeups import Wakeups
from provider.client.worker_queue import WorkerQueue
from provider.config import TaskHubConfig, TaskHubSettings


class HubPlans(InstanceControl, OrchestrationQueue, WorkerQueue, InstanceState, Management):
    """Every operation of a task hub, as a plan of procedure calls."""


class TaskHub(ProcedureClient):
    """One task hub (one schema) in one database, blocking calls on a pool.

    hub = TaskHub.connect("postgresql://app@db/app", schema="orders")
    item = hub.fetch_orchestration_item()
    """

    def __init__(self, config: TaskHubConfig, *, open_pool: bool = True) -> None:
        super().__init__(config, open_pool=open_pool)
        self.plans = HubPlans(config)

    @classmethod
    def connect(
        cls, url: str, schema: str = "public", **settings: Unpack[TaskHubSettings]
    ) -> TaskHub:
        """The hub, connected: a URL, server, login or database it cannot use
        raises ConfigurationError now. TaskHub(config, open_pool=False)
        connects on open() instead."""
        return cls(TaskHubConfig(url=url, schema=schema, **settings))

    def __enter__(self) -> TaskHub:
        return self

    def wakeups(self, queue: str = "worker") -> Wakeups:
        """The process's listener for this hub's schema, shared by every
        worker of the process; release() it when done."""
        return Wakeups.acquire(self.config, queue, self.pooling.listen_url(self.config))

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # starting work, on the pool or inside the caller's transaction
    def start_orchestration(
        self,
        instance_id: str,
        name: str,
        input: Any = None,
        version: str | None = None,
        *,
        conn: psycopg.Connection[Any] | None = None,
    ) -> bool:
        """Start an orchestration as the duroxide client does, once: True when
        this call started it, False when the instance exists or its start is
        queued (nothing written). Safe to repeat with the same instance id
        after a RetryableError. A hub opened on a schema before revision 0025
        queues every start, as the duroxide client does, and returns True.
        With `conn`, the work item is written on that connection, in its open
        transaction: it becomes visible when the caller commits, and is gone
        if it rolls back."""
        plan = self.plans.start_orchestration(
            instance_id, name, input, version, once=self.start_once
        )
        started: bool = self.run(plan, conn)
        return started

    def raise_event(
        self,
        instance_id: str,
        name: str,
        data: Any = None,
        *,
        conn: psycopg.Connection[Any] | None = None,
    ) -> None:
        """Raise an external event as the duroxide client does (`conn`: as above)."""
        self.run(self.plans.raise_event(instance_id, name, data), conn)

    # orchestrator queue
    enqueue_orchestrator_work = blocking(HubPlans.enqueue_orchestrator_work)
    enqueue_for_orchestrator = blocking(HubPlans.enqueue_for_orchestrator)
    fetch_orchestration_item = blocking(HubPlans.fetch_orchestration_item)
    ack_orchestration_item = blocking(HubPlans.ack_orchestration_item)
    abandon_orchestration_item = blocking(HubPlans.abandon_orchestration_item)
    renew_orchestration_item_lock = blocking(HubPlans.renew_orchestration_item_lock)
    # worker queue and sessions
    enqueue_worker_work = blocking(HubPlans.enqueue_worker_work)
    fetch_work_item = blocking(HubPlans.fetch_work_item)
    ack_work_item = blocking(HubPlans.ack_work_item)
    abandon_work_item = blocking(HubPlans.abandon_work_item)
    renew_work_item_lock = blocking(HubPlans.renew_work_item_lock)
    renew_session_lock = blocking(HubPlans.renew_session_lock)
    renew_session_lease = blocking(HubPlans.renew_session_lease)
    cleanup_orphaned_sessions = blocking(HubPlans.cleanup_orphaned_sessions)
    set_wakeup_waiting = blocking(HubPlans.set_wakeup_waiting)
    # instance state
    read_history = blocking(HubPlans.read_history)
    append_history = blocking(HubPlans.append_history)
    get_custom_status = blocking(HubPlans.get_custom_status)
    get_kv_value = blocking(HubPlans.get_kv_value)
    get_kv_all_values = blocking(HubPlans.get_kv_all_values)
    get_instance_stats = blocking(HubPlans.get_instance_stats)
    trace_context = blocking(HubPlans.trace_context)
    # management
    list_instances = blocking(HubPlans.list_instances)
    list_instances_by_status = blocking(HubPlans.list_instances_by_status)
    list_executions = blocking(HubPlans.list_executions)
    latest_execution_id = blocking(HubPlans.latest_execution_id)
    get_instance_info = blocking(HubPlans.get_instance_info)
    get_execution_info = blocking(HubPlans.get_execution_info)
    get_system_metrics = blocking(HubPlans.get_system_metrics)
    get_queue_depths = blocking(HubPlans.get_queue_depths)
    list_children = blocking(HubPlans.list_children)
    get_parent_id = blocking(HubPlans.get_parent_id)
    get_instance_tree = blocking(HubPlans.get_instance_tree)
    delete_instances_atomic = blocking(HubPlans.delete_instances_atomic)
    delete_instance = blocking(HubPlans.delete_instance)
    delete_instance_bulk = blocking(HubPlans.delete_instance_bulk)
    prune_ended = blocking(HubPlans.prune_ended)
    dispatch_lag_ms = blocking(HubPlans.dispatch_lag_ms)
    prune_executions = blocking(HubPlans.prune_executions)
    prune_executions_bulk = blocking(HubPlans.prune_executions_bulk)
    # operators: instances found by status, name and time; cancelled
    find_instances = blocking(HubPlans.find_instances)
    cancel_instance = blocking(HubPlans.cancel_instance)


class AsyncTaskHub(AsyncProcedureClient):
    """TaskHub for asyncio: the same methods, arguments, results and errors, awaited.

    async with AsyncTaskHub.connect("postgresql://app@db/app", schema="orders") as hub:
        item = await hub.fetch_orchestration_item()
    """

    def __init__(self, config: TaskHubConfig) -> None:
        super().__init__(config)
        self.plans = HubPlans(config)

    @classmethod
    def connect(
        cls, url: str, schema: str = "public", **settings: Unpack[TaskHubSettings]
    ) -> AsyncTaskHub:
        """The hub; its pool opens on `async with` (or `await hub.open()`),
        which raises ConfigurationError when it cannot connect. A URL libpq
        cannot parse raises it now."""
        return cls(TaskHubConfig(url=url, schema=schema, **settings))

    async def __aenter__(self) -> AsyncTaskHub:
        await self.open()
        return self

    def wakeups(self, queue: str = "worker") -> Wakeups:
        """As TaskHub.wakeups: the same listener serves asyncio workers."""
        return Wakeups.acquire(self.config, queue, self.pooling.listen_url(self.config))

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # starting work, on the pool or inside the caller's transaction
    async def start_orchestration(
        self,
        instance_id: str,
        name: str,
        input: Any = None,
        version: str | None = None,
        *,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> bool:
        """As TaskHub.start_orchestration: True when this call started it,
        False when it already exists; safe to repeat after a RetryableError."""
        plan = self.plans.start_orchestration(
            instance_id, name, input, version, once=self.start_once
        )
        started: bool = await self.run(plan, conn)
        return started

    async def raise_event(
        self,
        instance_id: str,
        name: str,
        data: Any = None,
        *,
        conn: psycopg.AsyncConnection[Any] | None = None,
    ) -> None:
        """Raise an external event as the duroxide client does (`conn`: as above)."""
        await self.run(self.plans.raise_event(instance_id, name, data), conn)

    # orchestrator queue
    enqueue_orchestrator_work = awaitable(HubPlans.enqueue_orchestrator_work)
    enqueue_for_orchestrator = awaitable(HubPlans.enqueue_for_orchestrator)
    fetch_orchestration_item = awaitable(HubPlans.fetch_orchestration_item)
    ack_orchestration_item = awaitable(HubPlans.ack_orchestration_item)
    abandon_orchestration_item = awaitable(HubPlans.abandon_orchestration_item)
    renew_orchestration_item_lock = awaitable(HubPlans.renew_orchestration_item_lock)
    # worker queue and sessions
    enqueue_worker_work = awaitable(HubPlans.enqueue_worker_work)
    fetch_work_item = awaitable(HubPlans.fetch_work_item)
    ack_work_item = awaitable(HubPlans.ack_work_item)
    abandon_work_item = awaitable(HubPlans.abandon_work_item)
    renew_work_item_lock = awaitable(HubPlans.renew_work_item_lock)
    renew_session_lock = awaitable(HubPlans.renew_session_lock)
    renew_session_lease = awaitable(HubPlans.renew_session_lease)
    cleanup_orphaned_sessions = awaitable(HubPlans.cleanup_orphaned_sessions)
    set_wakeup_waiting = awaitable(HubPlans.set_wakeup_waiting)
    # instance state
    read_history = awaitable(HubPlans.read_history)
    append_history = awaitable(HubPlans.append_history)
    get_custom_status = awaitable(HubPlans.get_custom_status)
    get_kv_value = awaitable(HubPlans.get_kv_value)
    get_kv_all_values = awaitable(HubPlans.get_kv_all_values)
    get_instance_stats = awaitable(HubPlans.get_instance_stats)
    trace_context = awaitable(HubPlans.trace_context)
    # management
    list_instances = awaitable(HubPlans.list_instances)
    list_instances_by_status = awaitable(HubPlans.list_instances_by_status)
    list_executions = awaitable(HubPlans.list_executions)
    latest_execution_id = awaitable(HubPlans.latest_execution_id)
    get_instance_info = awaitable(HubPlans.get_instance_info)
    get_execution_info = awaitable(HubPlans.get_execution_info)
    get_system_metrics = awaitable(HubPlans.get_system_metrics)
    get_queue_depths = awaitable(HubPlans.get_queue_depths)
    list_children = awaitable(HubPlans.list_children)
    get_parent_id = awaitable(HubPlans.get_parent_id)
    get_instance_tree = awaitable(HubPlans.get_instance_tree)
    delete_instances_atomic = awaitable(HubPlans.delete_instances_atomic)
    delete_instance = awaitable(HubPlans.delete_instance)
    delete_instance_bulk = awaitable(HubPlans.delete_instance_bulk)
    prune_ended = awaitable(HubPlans.prune_ended)
    dispatch_lag_ms = awaitable(HubPlans.dispatch_lag_ms)
    prune_executions = awaitable(HubPlans.prune_executions)
    prune_executions_bulk = awaitable(HubPlans.prune_executions_bulk)
    # operators: instances found by status, name and time; cancelled
    find_instances = awaitable(HubPlans.find_instances)
    cancel_instance = awaitable(HubPlans.cancel_instance)
