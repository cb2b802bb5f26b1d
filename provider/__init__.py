"""taskhub-pg: a PostgreSQL task hub for durable orchestrations.

from provider import TaskHub
hub = TaskHub.connect("postgresql://...", schema="orders")
item = hub.fetch_orchestration_item()
"""

from provider.config import TaskHubConfig
from provider.errors import LockLost, PermanentError, RetryableError, TaskHubError
from provider.task_hub import TaskHub, now_ms
from provider.types import (
    KvEntry,
    OrchestrationItem,
    TagFilter,
    VersionRange,
    WorkItemLease,
)

__all__ = [
    "KvEntry",
    "LockLost",
    "OrchestrationItem",
    "PermanentError",
    "RetryableError",
    "TagFilter",
    "TaskHub",
    "TaskHubConfig",
    "TaskHubError",
    "VersionRange",
    "WorkItemLease",
    "now_ms",
]
