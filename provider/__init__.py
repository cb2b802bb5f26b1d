"""taskhub-pg: a PostgreSQL task hub for durable orchestrations.

from provider import TaskHub
hub = TaskHub.connect("postgresql://...", schema="orders")
item = hub.fetch_orchestration_item()

async with AsyncTaskHub.connect("postgresql://...", schema="orders") as hub:
    item = await hub.fetch_orchestration_item()
"""

from provider.client.procedures import now_ms
from provider.client.task_hub import AsyncTaskHub, TaskHub
from provider.config import TaskHubConfig
from provider.errors import (
    ConfigurationError,
    InvalidInput,
    LockLost,
    PermanentError,
    RetryableError,
    TaskHubError,
)
from provider.logs import JsonLogFormatter
from provider.shapes import ExecutionMetadata
from provider.types import (
    CustomStatus,
    DeleteResult,
    ExecutionInfo,
    InstanceInfo,
    InstanceStats,
    InstanceTree,
    KvEntry,
    OrchestrationItem,
    PrunedBatch,
    PruneResult,
    QueueDepths,
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
    "AsyncLeaseKeeper",
    "AsyncTaskHub",
    "CancellationToken",
    "ConfigurationError",
    "CustomStatus",
    "DeleteResult",
    "ExecutionInfo",
    "ExecutionMetadata",
    "InstanceInfo",
    "InstanceStats",
    "InstanceTree",
    "InvalidInput",
    "JsonLogFormatter",
    "KvEntry",
    "LeaseKeeper",
    "LockLost",
    "OrchestrationItem",
    "PermanentError",
    "PruneResult",
    "PrunedBatch",
    "QueueDepths",
    "RetryableError",
    "SystemMetrics",
    "TagFilter",
    "TaskHub",
    "TaskHubConfig",
    "TaskHubError",
    "VersionRange",
    "WorkCancelled",
    "WorkItemLease",
    "keep_orchestration_lease",
    "now_ms",
]
