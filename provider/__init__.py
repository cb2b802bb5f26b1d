"""taskhub-pg: a PostgreSQL task hub for durable orchestrations.

An application starts orchestrations and reads their outcome with Client:

from provider import Client
with Client.connect("postgresql://...", schema="orders") as client:
    client.start("order-42", "ProcessOrder", {"sku": "A-1"})
    print(client.wait_for_completion("order-42").output)

TaskHub is the runtime's contract (fetch, ack, renew, ...):

from provider import TaskHub
hub = TaskHub.connect("postgresql://...", schema="orders")
item = hub.fetch_orchestration_item()

async with AsyncTaskHub.connect("postgresql://...", schema="orders") as hub:
    item = await hub.fetch_orchestration_item()
"""

from provider.client.app_client import AsyncClient, Client
from provider.client.procedures import now_ms
from provider.client.scheduler import Fired, Scheduler
from provider.client.task_hub import AsyncTaskHub, TaskHub
from provider.config import TaskHubConfig, TaskHubSettings
from provider.errors import (
    ConfigurationError,
    InstanceEnded,
    InstanceFailed,
    InstanceNotEnded,
    InstanceNotFound,
    InstanceRunning,
    InvalidInput,
    LockLost,
    PermanentError,
    RetryableError,
    ScheduleNotFound,
    StartConflict,
    TaskHubError,
    WaitTimeout,
)
from provider.logs import JsonLogFormatter
from provider.shapes import ExecutionMetadata
from provider.types import (
    CustomStatus,
    DeleteResult,
    ExecutionInfo,
    FlowRule,
    InstanceInfo,
    InstanceStats,
    InstanceStatus,
    InstanceStatusName,
    InstanceSummary,
    InstanceTree,
    KvEntry,
    MissedPolicy,
    OrchestrationItem,
    PrunedBatch,
    PruneResult,
    QueueDepths,
    Restart,
    Schedule,
    StartRequest,
    StartResult,
    SystemMetrics,
    TagFilter,
    VersionRange,
    WorkItemLease,
)
from provider.worker.activity_worker import ActivityWorker
from provider.worker.async_worker import AsyncActivityWorker
from provider.worker.cancellation import CancellationToken, WorkCancelled
from provider.worker.core import ActivityContext
from provider.worker.lease_keeper import AsyncLeaseKeeper, LeaseKeeper, keep_orchestration_lease

__all__ = [
    "ActivityContext",
    "ActivityWorker",
    "AsyncActivityWorker",
    "AsyncClient",
    "AsyncLeaseKeeper",
    "AsyncTaskHub",
    "CancellationToken",
    "Client",
    "ConfigurationError",
    "CustomStatus",
    "DeleteResult",
    "ExecutionInfo",
    "ExecutionMetadata",
    "Fired",
    "FlowRule",
    "InstanceEnded",
    "InstanceFailed",
    "InstanceInfo",
    "InstanceNotEnded",
    "InstanceNotFound",
    "InstanceRunning",
    "InstanceStats",
    "InstanceStatus",
    "InstanceStatusName",
    "InstanceSummary",
    "InstanceTree",
    "InvalidInput",
    "JsonLogFormatter",
    "KvEntry",
    "LeaseKeeper",
    "LockLost",
    "MissedPolicy",
    "OrchestrationItem",
    "PermanentError",
    "PruneResult",
    "PrunedBatch",
    "QueueDepths",
    "Restart",
    "RetryableError",
    "Schedule",
    "ScheduleNotFound",
    "Scheduler",
    "StartConflict",
    "StartRequest",
    "StartResult",
    "SystemMetrics",
    "TagFilter",
    "TaskHub",
    "TaskHubConfig",
    "TaskHubError",
    "TaskHubSettings",
    "VersionRange",
    "WaitTimeout",
    "WorkCancelled",
    "WorkItemLease",
    "keep_orchestration_lease",
    "now_ms",
]
